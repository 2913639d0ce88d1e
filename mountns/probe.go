package mountns

import (
	"strconv"
	"strings"

	"sandbox-executable/fsdeps"
)

// capSysAdmin is CAP_SYS_ADMIN's bit in /proc/self/status's CapEff.
const capSysAdmin = 21

// Availability says whether this process can give its child the
// namespaces of a run (a mount namespace among them), and how: Probe
// decides it by trying.
type Availability struct {
	OK bool `json:"ok"`
	// Privileged: CAP_SYS_ADMIN, so no user namespace is needed.
	Privileged bool `json:"privileged"`
	// Network: a network namespace can be had too; NetworkWhy says why
	// not, when the others can.
	Network    bool   `json:"network"`
	NetworkWhy string `json:"network_why,omitempty"`
	// Why explains the answer; Fix, when namespaces cannot be had, names
	// what would give them (a container's setting, a sysctl).
	Why string `json:"why"`
	Fix string `json:"fix,omitempty"`
	// Attempt is the failed attempt that decided, when namespaces cannot
	// be had.
	Attempt *Attempt `json:"-"`
}

// readInt reads a one-number file (a sysctl), recorded by its content.
func readInt(path string) (int, bool) {
	b, err := fsdeps.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return v, err == nil
}

// hasCap reports whether the effective capability set holds bit n.
func hasCap(n uint) bool {
	caps, _ := selfStatus()
	return caps&(1<<n) != 0
}

// seccompFiltered reports whether a seccomp filter applies to this process.
func seccompFiltered() bool {
	_, filtered := selfStatus()
	return filtered
}

// selfStatus reads /proc/self/status once for what this package asks of
// it: the effective capabilities (CapEff) and whether a seccomp filter
// applies (Seccomp: 2). Unreadable, it says no capabilities and no filter.
// Both are in the recipe's key: this process's own file is read unrecorded.
func selfStatus() (capEff uint64, filtered bool) {
	b, err := fsdeps.ReadProcSelf("/proc/self/status", "CapEff and Seccomp (capabilities, seccomp mode)")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			capEff, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		} else if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			filtered = strings.TrimSpace(v) == "2"
		}
	}
	return capEff, filtered
}
