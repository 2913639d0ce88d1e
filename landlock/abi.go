package landlock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ABI returns the Landlock ABI version of the running kernel, asked with the
// system call itself (not securityfs); 0 when Landlock is not available
// (not built in, disabled at boot, or blocked by a container's filter).
func ABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// Errata returns the bitmask of Landlock errata fixed in the running kernel
// (LANDLOCK_CREATE_RULESET_ERRATA, ABI 7 and later kernels with backports).
func Errata() (uint64, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_ERRATA)
	if errno != 0 {
		return 0, errno
	}
	return uint64(v), nil
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowed uint64
	port    uint64
}

func createRuleset(fs AccessFS, net uint64, scoped uint64) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: uint64(fs), Handled_access_net: net, Scoped: scoped}
	// Pass only as much of the struct as this ruleset uses, so kernels
	// that know fewer fields accept it.
	size := unsafe.Offsetof(attr.Handled_access_net)
	if net != 0 {
		size = unsafe.Offsetof(attr.Scoped)
	}
	if scoped != 0 {
		size = unsafe.Offsetof(attr.Quiet_access_fs)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func addPathRule(ruleset, fd int, access AccessFS) error {
	attr := unix.LandlockPathBeneathAttr{Allowed_access: uint64(access), Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

const ruleNetPort = 2 // LANDLOCK_RULE_NET_PORT

func addPortRule(ruleset int, access uint64, port uint16) error {
	attr := netPortAttr{allowed: access, port: uint64(port)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), ruleNetPort,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
