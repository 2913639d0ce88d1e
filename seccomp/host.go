package seccomp

import (
	"slices"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
)

// Host is what the host's way of running adds to a Plan's rules.
type Host struct {
	// DenyUnixSockets: socket(AF_UNIX) fails, where daemons' sockets can be
	// kept out of reach no other way (no Landlock scoping, no mediation).
	DenyUnixSockets bool
	// Mediate are the calls the supervisor carries out for the program
	// (ActionMediate; sockmed.Syscalls), or none.
	Mediate []string
	// MediateFiles sends the calls that make, remove, rename or open for
	// writing a file to the supervisor (FileCalls), which carries out
	// those whose parent directory Landlock-only mode split (package
	// fsmed) and lets the kernel carry out the others.
	MediateFiles bool
}

// FileCalls are the calls MediateFiles sends to the supervisor: every call
// that makes, removes or renames a directory entry, and the opens that may
// create, truncate or write (the filter looks at their flags; openat2
// passes them in memory, where a filter cannot look, so it goes whole).
// Calls this architecture does not have (arm64 has only the *at ones) get
// no rule.
var FileCalls = []string{"open", "openat", "openat2", "creat", "mkdir", "mkdirat", "mknod", "mknodat",
	"rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "symlink", "symlinkat", "link", "linkat",
	"truncate"}

// fileRules are MediateFiles' rules for the calls the Plan leaves to them.
func fileRules(plan []policy.SyscallRule) (rules []policy.SyscallRule, dropped []int) {
	var calls []string
	for _, name := range FileCalls {
		if native, _ := (Table{}).Lookup(name); native {
			calls = append(calls, name)
		}
	}
	const why = "sent to the supervisor: in a directory Landlock-only mode splits (a root's top level) it carries the call out itself, never for a protected name; elsewhere the kernel does, in the program"
	return mediated(plan, calls, func(name string) []policy.SyscallRule {
		// Where the open's flags are (open: argument 1, openat: 2): it
		// goes to the supervisor when it may create (O_CREAT, O_TMPFILE
		// with a writing mode), truncate, or write.
		flags := map[string]uint{"open": 1, "openat": 2}
		i, ok := flags[name]
		if !ok {
			return []policy.SyscallRule{{Syscall: name, Action: ActionMediate, Why: why}}
		}
		var out []policy.SyscallRule
		for _, c := range []struct{ mask, value uint64 }{
			{unix.O_CREAT, unix.O_CREAT}, {unix.O_TRUNC, unix.O_TRUNC},
			{unix.O_ACCMODE, unix.O_WRONLY}, {unix.O_ACCMODE, unix.O_RDWR},
		} {
			out = append(out, policy.SyscallRule{Syscall: name, Action: ActionMediate, Why: why,
				Args: []policy.ArgCondition{{Index: i, Op: opMaskedEq, Mask: c.mask, Value: c.value}}})
		}
		return out
	})
}

// Assemble is the one producer of the rules a filter is compiled from: the
// Plan's (StrictModel's), less the log rules of calls that are mediated
// instead, then the host's, which it also returns apart (for reports).
// Because the Plan's and the host's rules meet only here, a call never gets
// two rules of which one would override the other (Compile still refuses
// such a pair: checkOverrides).
func Assemble(plan []policy.SyscallRule, h Host) (rules, host []policy.SyscallRule) {
	if h.DenyUnixSockets {
		host = append(host, policy.SyscallRule{Syscall: "socket", Action: policy.ActionErrno, Errno: "EPERM",
			Args: []policy.ArgCondition{{Index: 0, Op: "eq", Value: unix.AF_UNIX}},
			Why:  "no unix sockets, so no daemon's (D-Bus, docker.sock, ssh-agent) can be reached"})
	}
	if len(h.Mediate) > 0 {
		med, dropped := mediationRules(plan, h.Mediate)
		plan = withoutRules(plan, dropped)
		host = append(host, med...)
	}
	if h.MediateFiles {
		med, dropped := fileRules(plan)
		plan = withoutRules(plan, dropped)
		host = append(host, med...)
	}
	return append(append([]policy.SyscallRule(nil), plan...), host...), host
}

// mediationRules are the filter's rules that send the socket calls to the
// supervisor, given the Plan's rules: a call the Plan already denies
// without condition stays denied (no rule); a call the Plan only logs
// (log_only) is mediated instead, and its log rule is returned in dropped.
// sendto goes to the supervisor only with an address (argument 4): without
// one it sends to the socket's peer, which a mediated connect chose.
func mediationRules(plan []policy.SyscallRule, calls []string) (rules []policy.SyscallRule, dropped []int) {
	return mediated(plan, calls, func(name string) []policy.SyscallRule {
		rule := policy.SyscallRule{Syscall: name, Action: ActionMediate,
			Why: "carried out by the supervisor: a pathname unix socket is reached only inside the writable roots"}
		if name == "sendto" {
			rule.Args = []policy.ArgCondition{{Index: 4, Op: "ne", Value: 0}}
		}
		return []policy.SyscallRule{rule}
	})
}

// mediated gives each of calls the rules rulesFor makes, given the Plan's rules:
// a call the Plan already denies without condition stays denied (no rule);
// a call the Plan only logs (log_only) is mediated instead, and its log
// rule is returned in dropped.
func mediated(plan []policy.SyscallRule, calls []string, rulesFor func(string) []policy.SyscallRule) (rules []policy.SyscallRule, dropped []int) {
	for _, name := range calls {
		denied := false
		for i, r := range plan {
			if r.Syscall != name {
				continue
			}
			if r.Action == policy.ActionLog && len(r.Args) == 0 {
				dropped = append(dropped, i)
				continue
			}
			denied = true
		}
		if denied {
			continue
		}
		rules = append(rules, rulesFor(name)...)
	}
	return rules, dropped
}

// withoutRules returns rules without the ones at the indices drop.
func withoutRules(rules []policy.SyscallRule, drop []int) []policy.SyscallRule {
	out := make([]policy.SyscallRule, 0, len(rules))
	for i, r := range rules {
		if !slices.Contains(drop, i) {
			out = append(out, r)
		}
	}
	return out
}
