package policy

import "strconv"

// seccompRules records the policy's seccomp intent in Plan.Seccomp: the
// profile's flags and the calls it blocks (Blocked), each checked against
// the syscall table. Which rules carry the intent out (the strict model,
// libseccomp's limits) is the seccomp package's to say (seccomp.StrictModel
// fills Rules and Skipped).
func (r *resolver) seccompRules() error {
	prof := r.in.Seccomp
	sc := &r.plan.Seccomp
	sc.AllowNamespaces = prof.AllowNamespaces
	sc.AllowNetworkSockets = prof.AllowNetworkSockets
	sc.LogOnly = prof.LogOnly
	sc.Rules = []SyscallRule{}
	listed := map[string]bool{}
	for i, name := range prof.BlockedSyscalls {
		if listed[name] {
			continue
		}
		listed[name] = true
		at := "blocked_syscalls[" + strconv.Itoa(i) + "]"
		native, known := r.in.Syscalls.Lookup(name)
		if name == "" || !known {
			return r.seccomp.err(at, quote(name)+" is not a system call on any architecture; refusing because a misspelled name would silently weaken the filter")
		}
		sc.Blocked = append(sc.Blocked, BlockedSyscall{Name: name, At: at, Native: native})
	}
	return nil
}
