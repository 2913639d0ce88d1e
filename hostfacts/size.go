package hostfacts

import (
	"runtime"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
)

// Size is what the built-in default's limits scale with (policy.StandaloneLimits):
// the CPUs this process may run on (its affinity, as runtime.NumCPU) and
// the machine's memory (sysinfo(2); 0 when unknown). Both come from system
// calls, not files: nothing for a stored decision to record.
func Size() policy.HostSize {
	h := policy.HostSize{CPUs: runtime.NumCPU()}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		h.MemoryBytes = uint64(si.Totalram) * uint64(si.Unit)
	}
	return h
}
