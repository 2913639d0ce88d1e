package seccomp

import (
	"fmt"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
)

// Argument comparison operators of policy.ArgCondition.
const (
	opEq       = "eq"
	opNe       = "ne"
	opLt       = "lt"
	opGe       = "ge"
	opMaskedEq = "masked_eq"
)

// StrictModel fills sc.Rules and sc.Skipped from the policy's intent (the
// calls its profile blocks, sc.Blocked; whether it allows namespaces; its
// network mode) and the strict model: first the blocked calls (and the
// twins of a listed mount the strict model leaves open), then the strict
// model's structural rules (namespaces, mounts, io_uring, terminal injection
// and hang-up, file handles, calls that reach the host whatever the
// namespaces, socket families), which log_only never relaxes. Each rule
// compares an argument at most once: libseccomp refuses a rule that
// compares the same argument twice, so ranges become several rules. It
// replaces what sc held (so a second call gives the same rules); table says
// which calls this architecture has (Table, or a fake in tests).
func StrictModel(sc *policy.Seccomp, mode policy.NetworkMode, table policy.SyscallTable) error {
	sc.Rules = []policy.SyscallRule{}
	sc.Skipped = nil

	structural := structuralRules(sc.AllowNamespaces, mode)
	restricted := map[string]bool{} // syscalls the strict model has rules for
	for _, rule := range structural {
		restricted[rule.Syscall] = true
	}
	// blocks records the syscalls a rule already fails unconditionally.
	blocks := map[string]bool{}
	logged := map[string]bool{}
	listed := map[string]bool{}
	listedAt := map[string]string{}
	for _, b := range sc.Blocked {
		name, at := b.Name, b.At
		listed[name] = true
		listedAt[name] = at
		switch {
		case !b.Native:
			sc.Skipped = append(sc.Skipped, policy.SkippedSyscall{Syscall: name, Why: at + ": not a system call on this architecture (it is on others), so there is nothing to block"})
		case sc.LogOnly && restricted[name]:
			// An unconditional log rule would override the strict
			// model's conditional denials of the same call (libseccomp
			// keeps one action per unconditional match): they stand,
			// and the call is not logged.
			sc.Skipped = append(sc.Skipped, policy.SkippedSyscall{Syscall: name, Why: at + ": log_only is true, but the strict model's rules for it still deny what they deny, so it is not logged"})
		case sc.LogOnly:
			sc.Rules = append(sc.Rules, policy.SyscallRule{Syscall: name, Action: policy.ActionLog, Why: at + ", logged and allowed because log_only is true"})
			logged[name] = true
		default:
			sc.Rules = append(sc.Rules, policy.SyscallRule{Syscall: name, Action: policy.ActionErrno, Errno: "EPERM", Why: at})
			blocks[name] = true
		}
	}

	// A blocked call with an open twin is a hole. With allow_namespaces
	// the strict model leaves the mount calls to the profile, and a
	// profile that lists mount would still let a root caller's program
	// fsmount and move_mount over (or away from) the masks: the twins go
	// with mount, blocked or logged as it is.
	if blocks["mount"] || logged["mount"] {
		at := listedAt["mount"] + " (mount): "
		for _, name := range mountTwins {
			if listed[name] || restricted[name] {
				continue // listed itself, or the strict model's rules stand
			}
			listed[name] = true
			native, known := table.Lookup(name)
			switch {
			case !known:
				return fmt.Errorf("seccomp: the rule for %q, the twin of the listed mount, cannot be built: the syscall table (libseccomp) does not know the call", name)
			case !native:
				sc.Skipped = append(sc.Skipped, policy.SkippedSyscall{Syscall: name, Why: at + name + " is its twin, but not a system call on this architecture"})
			case logged["mount"]:
				sc.Rules = append(sc.Rules, policy.SyscallRule{Syscall: name, Action: policy.ActionLog, Why: at + name + " changes mounts another way, logged and allowed because log_only is true"})
			default:
				sc.Rules = append(sc.Rules, eperm(name, at+name+" changes mounts another way, so it is blocked with mount"))
				blocks[name] = true
			}
		}
	}

	for _, rule := range structural {
		if blocks[rule.Syscall] {
			continue
		}
		native, known := table.Lookup(rule.Syscall)
		if !known {
			// An older libseccomp without the name: the rule would be
			// lost, and with it what it stops.
			return fmt.Errorf("seccomp: the strict model's rule for %q cannot be built: the syscall table (libseccomp) does not know the call", rule.Syscall)
		}
		if !native {
			if !listed[rule.Syscall] {
				listed[rule.Syscall] = true
				sc.Skipped = append(sc.Skipped, policy.SkippedSyscall{Syscall: rule.Syscall, Why: "strict model rule: not a system call on this architecture, so there is nothing to filter"})
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

func eperm(syscall, why string, args ...policy.ArgCondition) policy.SyscallRule {
	return policy.SyscallRule{Syscall: syscall, Action: policy.ActionErrno, Errno: "EPERM", Args: args, Why: why}
}

func cond(index uint, op string, value uint64) policy.ArgCondition {
	return policy.ArgCondition{Index: index, Op: op, Value: value}
}

func masked(index uint, mask, value uint64) policy.ArgCondition {
	return policy.ArgCondition{Index: index, Op: opMaskedEq, Mask: mask, Value: value}
}

// structuralRules returns the strict model's rules for the given profile
// flag and network mode.
func structuralRules(allowNamespaces bool, mode policy.NetworkMode) []policy.SyscallRule {
	var rules []policy.SyscallRule
	if !allowNamespaces {
		for _, f := range cloneNamespaceFlags {
			rules = append(rules, eperm("clone", "allow_namespaces is false: no new "+f.name+" namespace",
				masked(0, f.flag, f.flag)))
		}
		rules = append(rules, policy.SyscallRule{Syscall: "clone3", Action: policy.ActionErrno, Errno: "ENOSYS",
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
		for _, s := range append([]string{"mount", "umount2"}, mountTwins...) {
			rules = append(rules, eperm(s, "allow_namespaces is false: no mount operations (the sandbox's view is made of mounts)"))
		}
		rules = append(rules, eperm("chroot", "allow_namespaces is false: with CAP_SYS_CHROOT (a root caller's program) chroot swaps the root the sandbox gave for a directory of the program's choosing, as pivot_root would"))
	}
	for _, s := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register"} {
		rules = append(rules, eperm(s, "io_uring performs operations that seccomp never sees"))
	}
	// ioctl requests are ints: the kernel looks at the low 32 bits only,
	// so the high ones are masked off rather than compared.
	rules = append(rules,
		eperm("ioctl", "TIOCSTI pushes input into the terminal, to be run outside the sandbox",
			masked(1, 0xffffffff, unix.TIOCSTI)),
		eperm("ioctl", "TIOCLINUX can inject input into a Linux console",
			masked(1, 0xffffffff, unix.TIOCLINUX)),
		eperm("ioctl", "TIOCCONS redirects the host's console output (kernel messages, /dev/console) to a terminal of the program's choosing (with CAP_SYS_ADMIN)",
			masked(1, 0xffffffff, unix.TIOCCONS)),
		eperm("ioctl", "TIOCVHANGUP hangs up a terminal as vhangup does, the one shared with the caller included: SIGHUP to the user's shell (with CAP_SYS_ADMIN)",
			masked(1, 0xffffffff, unix.TIOCVHANGUP)),
		eperm("ioctl", "TIOCSETD changes a terminal's line discipline, the one shared with the caller included: N_NULL leaves the user's shell deaf and mute after the run",
			masked(1, 0xffffffff, unix.TIOCSETD)),
		eperm("ioctl", "TIOCEXCL puts a terminal in exclusive mode, the one shared with the caller included: every later open of it (ssh's, sudo's and git's prompts) fails with EBUSY",
			masked(1, 0xffffffff, unix.TIOCEXCL)),
		eperm("ioctl", "USERFAULTFD_IOC_NEW on /dev/userfaultfd makes a userfaultfd without the userfaultfd call, which VT Code's list blocks",
			masked(1, 0xffffffff, userfaultfdIocNew)),
		eperm("open_by_handle_at", "with CAP_DAC_READ_SEARCH it opens files by handle, around path-based restrictions"),
	)
	for _, c := range hostCalls {
		rules = append(rules, eperm(c.name, c.why))
	}
	return append(rules, socketRules(mode)...)
}

// mountTwins change the mount table another way than mount and umount2
// (pivot_root moves the root mount, the rest is the new mount API).
var mountTwins = []string{"pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"}

// userfaultfdIocNew is USERFAULTFD_IOC_NEW, _IO(0xAA, 0x00) (linux/
// userfaultfd.h; golang.org/x/sys has no constant). _IO's direction bits
// differ between architectures (0 on x86 and arm, 1<<29 on mips, powerpc
// and sparc): they are taken from BLKRRPART, _IO(0x12, 95).
const userfaultfdIocNew = unix.BLKRRPART&^0xffff | 0xaa<<8

// hostCalls reach what namespaces do not separate (the clock, the kernel
// log, the host's names, the terminal shared with the caller, every open
// of every file, other processes' fds, disk quotas): whatever the profile
// lists, a program in the sandbox must not make them. Most need a
// capability, which a root caller's program has; no compiler, git, node,
// python, go or npm makes them.
var hostCalls = []struct{ name, why string }{
	{"fanotify_init", "with CAP_SYS_ADMIN a mark on a whole filesystem or mount hands the program an open fd of every file host processes open (around Landlock and the masks), and its permission events stall them"},
	{"syslog", "reads the host's kernel log; with CAP_SYSLOG it clears it and changes the console log level"},
	{"clock_adjtime", "adjusts the host's clock (with CAP_SYS_TIME): the twin of adjtimex, which VT Code's list blocks and which glibc's adjtimex() now reaches through clock_adjtime"},
	{"sethostname", "renames the host (with CAP_SYS_ADMIN) wherever the sandbox has no UTS namespace of its own (Landlock-only mode)"},
	{"setdomainname", "changes the host's NIS domain name (with CAP_SYS_ADMIN) wherever the sandbox has no UTS namespace of its own"},
	{"vhangup", "hangs up the controlling terminal, shared with the caller: SIGHUP to the user's login shell and all on it (with CAP_SYS_TTY_CONFIG)"},
	{"pidfd_getfd", "copies an open fd out of another process of the user's (the shell, ssh-agent, an editor): ptrace's fd theft without ptrace, which VT Code's list blocks"},
	{"quotactl_fd", "changes the disk quotas of a host filesystem (with CAP_SYS_ADMIN): the twin of quotactl, which VT Code's list blocks"},
}

// inetFamilies are the IP socket families.
var inetFamilies = []struct {
	name string
	af   uint64
}{{"AF_INET", unix.AF_INET}, {"AF_INET6", unix.AF_INET6}}

// socketRules limits socket(domain, type, protocol). Families are compared
// on the whole 64-bit argument, so a value with high bits set (which the
// kernel would truncate to an allowed-looking int) is denied too.
func socketRules(mode policy.NetworkMode) []policy.SyscallRule {
	if mode == policy.NetworkNone {
		return []policy.SyscallRule{
			eperm("socket", "network mode none: only AF_UNIX sockets", cond(0, opLt, unix.AF_UNIX)),
			eperm("socket", "network mode none: only AF_UNIX sockets", cond(0, opGe, unix.AF_UNIX+1)),
		}
	}
	allowed := map[uint64]bool{unix.AF_UNIX: true, unix.AF_INET: true, unix.AF_INET6: true, unix.AF_NETLINK: true}
	familyWhy := "network mode " + string(mode) + ": only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK sockets"
	var rules []policy.SyscallRule
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
	if mode == policy.NetworkAllowlist {
		for _, fam := range inetFamilies {
			rules = append(rules, eperm("socket", fam.name+" IPPROTO_MPTCP: Landlock's TCP rules do not cover MPTCP",
				cond(0, opEq, fam.af), masked(2, 0xffffffff, unix.IPPROTO_MPTCP)))
		}
	}
	return rules
}
