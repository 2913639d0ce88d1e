package policy

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// Argument comparison operators of ArgCondition.
const (
	opEq       = "eq"
	opNe       = "ne"
	opLt       = "lt"
	opGe       = "ge"
	opMaskedEq = "masked_eq"
)

// seccompRules fills Plan.Seccomp: first the profile's blocked_syscalls,
// then the strict model's structural rules (namespaces, io_uring, terminal
// injection, file handles, socket families), which log_only never relaxes.
// Each rule compares an argument at most once: libseccomp refuses a rule
// that compares the same argument twice, so ranges become several rules.
func (r *resolver) seccompRules() error {
	prof := r.in.Seccomp
	sc := &r.plan.Seccomp
	sc.AllowNamespaces = prof.AllowNamespaces
	sc.AllowNetworkSockets = prof.AllowNetworkSockets
	sc.LogOnly = prof.LogOnly
	sc.Rules = []SyscallRule{}

	structural := structuralRules(prof.AllowNamespaces, r.plan.Network.Mode)
	restricted := map[string]bool{} // syscalls the strict model has rules for
	for _, rule := range structural {
		restricted[rule.Syscall] = true
	}
	// blocks records the syscalls a rule already fails unconditionally.
	blocks := map[string]bool{}
	listed := map[string]bool{}
	for i, name := range prof.BlockedSyscalls {
		if listed[name] {
			continue
		}
		listed[name] = true
		at := "blocked_syscalls[" + strconv.Itoa(i) + "]"
		native, known := r.in.Syscalls.Lookup(name)
		switch {
		case name == "" || !known:
			return r.seccomp.err(at, quote(name)+" is not a system call on any architecture; refusing because a misspelled name would silently weaken the filter")
		case !native:
			sc.Skipped = append(sc.Skipped, SkippedSyscall{Syscall: name, Why: at + ": not a system call on this architecture (it is on others), so there is nothing to block"})
		case prof.LogOnly && restricted[name]:
			// An unconditional log rule would override the strict
			// model's conditional denials of the same call (libseccomp
			// keeps one action per unconditional match): they stand,
			// and the call is not logged.
			sc.Skipped = append(sc.Skipped, SkippedSyscall{Syscall: name, Why: at + ": log_only is true, but the strict model's rules for it still deny what they deny, so it is not logged"})
		case prof.LogOnly:
			sc.Rules = append(sc.Rules, SyscallRule{Syscall: name, Action: ActionLog, Why: at + ", logged and allowed because log_only is true"})
		default:
			sc.Rules = append(sc.Rules, SyscallRule{Syscall: name, Action: ActionErrno, Errno: "EPERM", Why: at})
			blocks[name] = true
		}
	}

	for _, rule := range structural {
		if blocks[rule.Syscall] {
			continue
		}
		native, known := r.in.Syscalls.Lookup(rule.Syscall)
		if !known {
			// An older libseccomp without the name: the rule would be
			// lost, and with it what it stops.
			return r.seccomp.err("", "the strict model's rule for "+quote(rule.Syscall)+" cannot be built: the syscall table (libseccomp) does not know the call")
		}
		if !native {
			if !listed[rule.Syscall] {
				listed[rule.Syscall] = true
				sc.Skipped = append(sc.Skipped, SkippedSyscall{Syscall: rule.Syscall, Why: "strict model rule: not a system call on this architecture, so there is nothing to filter"})
			}
			continue
		}
		sc.Rules = append(sc.Rules, rule)
	}
	return nil
}

// nsFlag is one CLONE_NEW* flag.
type nsFlag struct {
	name string
	flag uint64
}

// Namespace flags, as CLONE_NEW* (CLONE_NEWTIME only for unshare: for clone
// the low byte is the exit signal).
var cloneNamespaceFlags = []nsFlag{
	{"CLONE_NEWNS", unix.CLONE_NEWNS},
	{"CLONE_NEWCGROUP", unix.CLONE_NEWCGROUP},
	{"CLONE_NEWUTS", unix.CLONE_NEWUTS},
	{"CLONE_NEWIPC", unix.CLONE_NEWIPC},
	{"CLONE_NEWUSER", unix.CLONE_NEWUSER},
	{"CLONE_NEWPID", unix.CLONE_NEWPID},
	{"CLONE_NEWNET", unix.CLONE_NEWNET},
}

func eperm(syscall, why string, args ...ArgCondition) SyscallRule {
	return SyscallRule{Syscall: syscall, Action: ActionErrno, Errno: "EPERM", Args: args, Why: why}
}

func cond(index uint, op string, value uint64) ArgCondition {
	return ArgCondition{Index: index, Op: op, Value: value}
}

func masked(index uint, mask, value uint64) ArgCondition {
	return ArgCondition{Index: index, Op: opMaskedEq, Mask: mask, Value: value}
}

// structuralRules returns the strict model's rules for the given profile
// flag and network mode.
func structuralRules(allowNamespaces bool, mode NetworkMode) []SyscallRule {
	var rules []SyscallRule
	if !allowNamespaces {
		for _, f := range cloneNamespaceFlags {
			rules = append(rules, eperm("clone", "allow_namespaces is false: no new "+f.name+" namespace",
				masked(0, f.flag, f.flag)))
		}
		rules = append(rules, SyscallRule{Syscall: "clone3", Action: ActionErrno, Errno: "ENOSYS",
			Why: "allow_namespaces is false: clone3 passes its flags in memory, which seccomp cannot inspect; ENOSYS makes libc fall back to clone, which is filtered"})
		unshareFlags := append(cloneNamespaceFlags[:len(cloneNamespaceFlags):len(cloneNamespaceFlags)],
			nsFlag{"CLONE_NEWTIME", unix.CLONE_NEWTIME})
		for _, f := range unshareFlags {
			rules = append(rules, eperm("unshare", "allow_namespaces is false: no new "+f.name+" namespace",
				masked(0, f.flag, f.flag)))
		}
		rules = append(rules, eperm("setns", "allow_namespaces is false: no joining other namespaces"))
		// The sandbox's own view of the filesystem is made of mounts: a
		// program with CAP_SYS_ADMIN over it (root) must not be able to
		// move, clone or peel them.
		for _, s := range []string{"mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"} {
			rules = append(rules, eperm(s, "allow_namespaces is false: no mount operations (the sandbox's view is made of mounts)"))
		}
	}
	for _, s := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register"} {
		rules = append(rules, eperm(s, "io_uring performs operations that seccomp never sees"))
	}
	rules = append(rules,
		eperm("ioctl", "TIOCSTI pushes input into the terminal, to be run outside the sandbox",
			masked(1, 0xffffffff, unix.TIOCSTI)),
		eperm("ioctl", "TIOCLINUX can inject input into a Linux console",
			masked(1, 0xffffffff, unix.TIOCLINUX)),
		eperm("open_by_handle_at", "with CAP_DAC_READ_SEARCH it opens files by handle, around path-based restrictions"),
	)
	return append(rules, socketRules(mode)...)
}

// inetFamilies are the IP socket families.
var inetFamilies = []struct {
	name string
	af   uint64
}{{"AF_INET", unix.AF_INET}, {"AF_INET6", unix.AF_INET6}}

// socketRules limits socket(domain, type, protocol). Families are compared
// on the whole 64-bit argument, so a value with high bits set (which the
// kernel would truncate to an allowed-looking int) is denied too.
func socketRules(mode NetworkMode) []SyscallRule {
	if mode == NetworkNone {
		return []SyscallRule{
			eperm("socket", "network mode none: only AF_UNIX sockets", cond(0, opLt, unix.AF_UNIX)),
			eperm("socket", "network mode none: only AF_UNIX sockets", cond(0, opGe, unix.AF_UNIX+1)),
		}
	}
	allowed := map[uint64]bool{unix.AF_UNIX: true, unix.AF_INET: true, unix.AF_INET6: true, unix.AF_NETLINK: true}
	familyWhy := "network mode " + string(mode) + ": only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK sockets"
	var rules []SyscallRule
	for f := uint64(0); f <= unix.AF_NETLINK; f++ {
		if !allowed[f] {
			rules = append(rules, eperm("socket", familyWhy, cond(0, opEq, f)))
		}
	}
	rules = append(rules,
		eperm("socket", familyWhy, cond(0, opGe, unix.AF_NETLINK+1)),
		eperm("socket", "netlink sockets only for NETLINK_ROUTE (interface and address queries)",
			cond(0, opEq, unix.AF_NETLINK), cond(2, opNe, unix.NETLINK_ROUTE)),
	)
	for _, fam := range inetFamilies {
		rules = append(rules,
			eperm("socket", fam.name+" SOCK_RAW would bypass the TCP/UDP rules",
				cond(0, opEq, fam.af), masked(1, 0xf, unix.SOCK_RAW)),
			eperm("socket", fam.name+" SOCK_PACKET would bypass the TCP/UDP rules",
				cond(0, opEq, fam.af), masked(1, 0xf, unix.SOCK_PACKET)),
		)
	}
	if mode == NetworkAllowlist {
		for _, fam := range inetFamilies {
			rules = append(rules, eperm("socket", fam.name+" IPPROTO_MPTCP: Landlock's TCP rules do not cover MPTCP",
				cond(0, opEq, fam.af), masked(2, 0xffffffff, unix.IPPROTO_MPTCP)))
		}
	}
	return rules
}
