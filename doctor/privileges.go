package doctor

import (
	"fmt"
	"strconv"
	"strings"

	"sandbox-executable/hostfacts"
)

// Capability bits of /proc/self/status (linux/capability.h).
const (
	capNetAdmin  = 12
	capSysPtrace = 19
	capSysAdmin  = 21
)

// capNames are the capability names by bit, without CAP_.
var capNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// capName names capability bit n ("SYS_ADMIN", or "CAP_41" for bits newer
// than this table).
func capName(n int) string {
	if n >= 0 && n < len(capNames) {
		return capNames[n]
	}
	return "CAP_" + strconv.Itoa(n)
}

// capList names the bits set in mask, lowest first.
func capList(mask uint64) []string {
	var out []string
	for n := range 64 {
		if mask&(1<<n) != 0 {
			out = append(out, capName(n))
		}
	}
	return out
}

// privilegesItem reports no_new_privs and the capabilities that matter to
// the helper. Informational: the helper sets no_new_privs for its child and
// needs no capability it does not check for itself.
func privilegesItem(s hostfacts.ProcStatus, lastCap int) Item {
	it := Item{ID: "privileges", Title: "no_new_privs and capabilities of this process", Status: StatusOK}
	var parts []string
	switch s.NoNewPrivs {
	case 0:
		parts = append(parts, "no_new_privs 0")
	case 1:
		parts = append(parts, "no_new_privs 1 (inherited)")
		it.Notes = append(it.Notes, "no_new_privs is already set: setuid and file-capability programs gain nothing here, sandboxed or not")
	default:
		parts = append(parts, "no_new_privs unknown")
	}
	if !s.HaveCapEff {
		parts = append(parts, "CapEff unreadable")
		it.Detail = strings.Join(parts, "; ")
		return it
	}
	var interesting []string
	for _, c := range []int{capSysAdmin, capNetAdmin, capSysPtrace} {
		mark := "-"
		if s.HasCap(uint(c)) {
			mark = "+"
		}
		interesting = append(interesting, mark+capName(c))
	}
	parts = append(parts, fmt.Sprintf("CapEff %#x: %s", s.CapEff, strings.Join(interesting, " ")))
	n := len(capList(s.CapEff))
	if lastCap >= 0 {
		full := uint64(1)<<(lastCap+1) - 1
		switch {
		case s.CapEff == 0:
			parts = append(parts, "no capabilities")
		case s.CapEff&full == full:
			parts = append(parts, "all capabilities")
		default:
			parts = append(parts, fmt.Sprintf("%d of %d capabilities", n, lastCap+1))
			if n > (lastCap+1)/2 {
				parts = append(parts, "lacking "+strings.Join(capList(full&^s.CapEff), ", "))
			}
		}
	} else {
		parts = append(parts, fmt.Sprintf("%d capabilities", n))
	}
	it.Detail = strings.Join(parts, "; ")
	return it
}
