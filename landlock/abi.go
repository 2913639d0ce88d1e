package landlock

import (
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
