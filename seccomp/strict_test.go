package seccomp

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
)

// matches reports whether a rule's conditions all hold for args, the way
// libseccomp compares (full 64-bit values).
func matches(r policy.SyscallRule, args [6]uint64) bool {
	for _, c := range r.Args {
		a := args[c.Index]
		var ok bool
		switch c.Op {
		case opEq:
			ok = a == c.Value
		case opNe:
			ok = a != c.Value
		case opLt:
			ok = a < c.Value
		case opGe:
			ok = a >= c.Value
		case opMaskedEq:
			ok = a&c.Mask == c.Value
		default:
			panic("unknown op " + c.Op)
		}
		if !ok {
			return false
		}
	}
	return true
}

// denies reports whether some EPERM/ENOSYS rule for syscall matches args,
// and no unconditional rule of another action for it overrides the denial
// (as libseccomp would).
func denies(rules []policy.SyscallRule, syscall string, args ...uint64) bool {
	var a [6]uint64
	copy(a[:], args)
	for _, r := range rules {
		if r.Syscall == syscall && r.Action != policy.ActionErrno && len(r.Args) == 0 {
			return false
		}
	}
	for _, r := range rules {
		if r.Syscall == syscall && r.Action == policy.ActionErrno && matches(r, a) {
			return true
		}
	}
	return false
}

// fakeSyscalls is a policy.SyscallTable: name -> native.
type fakeSyscalls map[string]bool

func (f fakeSyscalls) Lookup(name string) (native, known bool) {
	native, known = f[name]
	return native, known
}

// testSyscalls knows VT Code's list and the strict model's system calls as
// native, except umount (known on other architectures only).
func testSyscalls() fakeSyscalls {
	t := fakeSyscalls{}
	for _, n := range policy.BlockedSyscalls {
		t[n] = true
	}
	for _, n := range []string{"clone", "clone3", "io_uring_setup", "io_uring_enter", "io_uring_register",
		"ioctl", "open_by_handle_at", "socket", "prctl", "chmod",
		"pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "chroot",
		"fanotify_init", "syslog", "clock_adjtime", "sethostname", "setdomainname", "vhangup", "pidfd_getfd", "quotactl_fd"} {
		t[n] = true
	}
	t["umount"] = false
	return t
}

// resolveSeccomp resolves a read_only policy with prof in network mode, as
// a run does (policy.Resolve records the intent), and applies the strict
// model with table.
func resolveSeccomp(t *testing.T, prof *policy.SeccompProfile, mode policy.NetworkMode, table policy.SyscallTable) (*policy.Plan, error) {
	t.Helper()
	pol := policy.SandboxPolicy{Kind: policy.KindReadOnly}
	switch mode {
	case policy.NetworkFull:
		pol.NetworkAccess = true
	case policy.NetworkAllowlist:
		pol.NetworkAllowlist = []policy.NetworkAllowlistEntry{{Domain: "a.example", Port: 443, Protocol: "tcp"}}
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in := policy.Input{Policy: pol, Seccomp: pol.DerivedSeccompProfile(), Limits: pol.DerivedResourceLimits(),
		ProcessCwd: dir, Environ: []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}, Syscalls: table,
		PasswdHome: func() (string, error) { return "", errors.New("no password database in tests") }}
	if prof != nil {
		in.Seccomp = *prof
	}
	plan, err := policy.Resolve(in)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if plan.Network.Mode != mode {
		t.Fatalf("mode %s, want %s", plan.Network.Mode, mode)
	}
	return plan, StrictModel(&plan.Seccomp, plan.Network.Mode, table)
}

func seccompPlan(t *testing.T, prof policy.SeccompProfile, mode policy.NetworkMode) *policy.Plan {
	t.Helper()
	plan, err := resolveSeccomp(t, &prof, mode, testSyscalls())
	if err != nil {
		t.Fatalf("StrictModel: %v", err)
	}
	return plan
}

func ruleNames(rules []policy.SyscallRule) []string {
	var out []string
	for _, r := range rules {
		s := r.Syscall
		if r.Action != policy.ActionErrno || r.Errno != "EPERM" {
			s += "/" + string(r.Action) + r.Errno
		}
		if len(r.Args) > 0 {
			s += "(args)"
		}
		out = append(out, s)
	}
	return out
}

func TestSeccompStrictProfile(t *testing.T) {
	plan := seccompPlan(t, policy.StrictSeccompProfile(), policy.NetworkNone)
	sc := plan.Seccomp

	// (a) the list: iopl once, umount skipped (not native here).
	var listed []string
	for _, n := range policy.BlockedSyscalls {
		if n != "umount" && !slices.Contains(listed, n) {
			listed = append(listed, n)
		}
	}
	for i, n := range listed {
		r := sc.Rules[i]
		if r.Syscall != n || r.Action != policy.ActionErrno || r.Errno != "EPERM" || len(r.Args) != 0 || !strings.HasPrefix(r.Why, "blocked_syscalls[") {
			t.Fatalf("rule %d: %+v, want unconditional EPERM for %s", i, r, n)
		}
	}
	if sc.Rules[len(listed)-1].Why != "blocked_syscalls[30]" || sc.Rules[24].Why != "blocked_syscalls[26]" || sc.Rules[24].Syscall != "acct" {
		t.Fatalf("indexes: %q %q", sc.Rules[len(listed)-1].Why, sc.Rules[24].Why)
	}
	want := []policy.SkippedSyscall{{Syscall: "umount", Why: "blocked_syscalls[2]: not a system call on this architecture (it is on others), so there is nothing to block"}}
	if !reflect.DeepEqual(sc.Skipped, want) {
		t.Fatalf("skipped %+v", sc.Skipped)
	}

	// (b) structural: unshare, setns, mount and umount2 already block
	// unconditionally.
	got := ruleNames(sc.Rules[len(listed):])
	wantNames := []string{
		"clone(args)", "clone(args)", "clone(args)", "clone(args)", "clone(args)", "clone(args)", "clone(args)",
		"clone3/errnoENOSYS",
		"pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "chroot",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		"ioctl(args)", "ioctl(args)", "ioctl(args)", "ioctl(args)", "ioctl(args)", "ioctl(args)", "ioctl(args)", "open_by_handle_at",
		"fanotify_init", "syslog", "clock_adjtime", "sethostname", "setdomainname", "vhangup", "pidfd_getfd", "quotactl_fd",
		"socket(args)", "socket(args)",
	}
	if !reflect.DeepEqual(got, wantNames) {
		t.Fatalf("structural rules\n got %q\nwant %q", got, wantNames)
	}
	if sc.AllowNamespaces || sc.AllowNetworkSockets || sc.LogOnly {
		t.Fatalf("flags %+v", sc)
	}
}

func TestSeccompNamespaceRules(t *testing.T) {
	flags := []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET}
	prof := policy.SeccompProfile{BlockedSyscalls: []string{"ptrace"}} // unshare/setns not listed
	rules := seccompPlan(t, prof, policy.NetworkNone).Seccomp.Rules
	for _, f := range flags {
		if !denies(rules, "clone", f|uint64(unix.SIGCHLD)) || !denies(rules, "unshare", f) {
			t.Errorf("flag %#x not denied", f)
		}
	}
	if !denies(rules, "unshare", unix.CLONE_NEWTIME) {
		t.Error("unshare(CLONE_NEWTIME) not denied")
	}
	// For clone the low byte is the exit signal: 0x80 must stay allowed.
	if denies(rules, "clone", unix.CLONE_VM|unix.CLONE_THREAD|0x80) || denies(rules, "clone", unix.CLONE_VM|uint64(unix.SIGCHLD)) {
		t.Error("ordinary clone denied")
	}
	if denies(rules, "unshare", unix.CLONE_FILES) || !denies(rules, "setns", 3, 0) || !denies(rules, "clone3") {
		t.Error("unshare(CLONE_FILES) denied, or setns/clone3 allowed")
	}
	for _, r := range rules {
		if r.Syscall == "clone3" && r.Errno != "ENOSYS" {
			t.Errorf("clone3 %+v", r)
		}
	}

	prof.AllowNamespaces = true
	rules = seccompPlan(t, prof, policy.NetworkNone).Seccomp.Rules
	for _, r := range rules {
		switch r.Syscall {
		case "clone", "clone3", "unshare", "setns":
			t.Errorf("allow_namespaces: rule %+v", r)
		}
	}

	// Listed unshare/setns still block with allow_namespaces (VT Code's list
	// blocks them regardless).
	rules = seccompPlan(t, policy.SeccompProfile{BlockedSyscalls: []string{"unshare", "setns"}, AllowNamespaces: true}, policy.NetworkNone).Seccomp.Rules
	if !denies(rules, "unshare", unix.CLONE_FILES) || !denies(rules, "setns") {
		t.Error("listed unshare/setns not blocked")
	}
}

func TestSeccompAlwaysRules(t *testing.T) {
	rules := seccompPlan(t, policy.SeccompProfile{BlockedSyscalls: []string{}, AllowNamespaces: true, AllowNetworkSockets: true}, policy.NetworkFull).Seccomp.Rules
	for _, s := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at"} {
		if !denies(rules, s) {
			t.Errorf("%s allowed", s)
		}
	}
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX, 0xffffffff00000000 | unix.TIOCSTI} {
		if !denies(rules, "ioctl", 0, req) {
			t.Errorf("ioctl %#x allowed", req)
		}
	}
	if denies(rules, "ioctl", 0, unix.TIOCGWINSZ) || denies(rules, "ioctl", unix.TIOCSTI, 0) {
		t.Error("harmless ioctl denied")
	}
}

// TestSeccompHostCalls: what reaches the host whatever the namespaces is
// denied under every profile, the most permissive and log_only included,
// and the terminal, console and userfaultfd ioctls whatever the high bits.
func TestSeccompHostCalls(t *testing.T) {
	calls := []string{"fanotify_init", "syslog", "clock_adjtime", "sethostname", "setdomainname", "vhangup", "pidfd_getfd", "quotactl_fd"}
	for _, prof := range []policy.SeccompProfile{
		policy.StrictSeccompProfile(),
		{BlockedSyscalls: []string{}, AllowNamespaces: true, AllowNetworkSockets: true},
		{BlockedSyscalls: append([]string{"syslog"}, policy.BlockedSyscalls...), AllowNamespaces: true, AllowNetworkSockets: true, LogOnly: true},
	} {
		modes := []policy.NetworkMode{policy.NetworkNone}
		if prof.AllowNetworkSockets {
			modes = append(modes, policy.NetworkFull, policy.NetworkAllowlist)
		}
		for _, mode := range modes {
			sc := seccompPlan(t, prof, mode).Seccomp
			for _, s := range calls {
				if !denies(sc.Rules, s) {
					t.Errorf("%+v %s: %s allowed", prof, mode, s)
				}
			}
			for _, req := range []uint64{unix.TIOCCONS, unix.TIOCVHANGUP, unix.TIOCSETD, unix.TIOCEXCL, userfaultfdIocNew, 1<<32 | unix.TIOCCONS, 0xdead<<48 | unix.TIOCVHANGUP, 1<<40 | unix.TIOCSETD, 1<<63 | unix.TIOCEXCL, 1<<63 | userfaultfdIocNew} {
				if !denies(sc.Rules, "ioctl", 1, req) {
					t.Errorf("%+v: ioctl %#x allowed", prof, req)
				}
			}
			// A listed host call under log_only is not logged: the
			// strict model's rule stands.
			for _, r := range sc.Rules {
				if r.Syscall == "syslog" && r.Action != policy.ActionErrno {
					t.Errorf("syslog relaxed: %+v", r)
				}
			}
		}
	}
	if userfaultfdIocNew != 0xaa00 && userfaultfdIocNew != 0x2000aa00 {
		t.Errorf("USERFAULTFD_IOC_NEW %#x", userfaultfdIocNew)
	}
	// Every host call says what it would do.
	for _, c := range hostCalls {
		if len(c.why) < 40 {
			t.Errorf("%s: reason %q", c.name, c.why)
		}
	}
}

// TestSeccompOrdinaryCallsAllowed: the strict model's twins stop at what
// ordinary programs do. kcmp only compares (Mesa and libdrm compare their
// own fds); TIOCSCTTY with 1 is what Go's SysProcAttr.Setctty and
// util-linux's script pass for every new pty; process_madvise only advises;
// name_to_handle_at hands out handles that only open_by_handle_at (denied)
// can use.
func TestSeccompOrdinaryCallsAllowed(t *testing.T) {
	for _, prof := range []policy.SeccompProfile{policy.StrictSeccompProfile(), {BlockedSyscalls: []string{}, AllowNetworkSockets: true}} {
		rules := seccompPlan(t, prof, policy.NetworkNone).Seccomp.Rules
		for _, s := range []string{"kcmp", "process_madvise", "name_to_handle_at", "inotify_init1", "fanotify_mark", "pidfd_open", "pidfd_send_signal",
			"clock_gettime", "uname", "setsid", "chdir", "fchdir", "execve", "wait4", "prctl", "chmod"} {
			if denies(rules, s) {
				t.Errorf("%s denied", s)
			}
		}
		for _, a := range [][]uint64{
			{0, unix.TIOCSCTTY, 0}, {0, unix.TIOCSCTTY, 1}, {0, unix.TIOCGWINSZ}, {0, unix.TIOCSWINSZ}, {0, unix.TCGETS}, {0, unix.TCSETS},
			{0, unix.TIOCGPGRP}, {0, unix.TIOCSPGRP}, {0, unix.TIOCOUTQ}, {0, unix.TIOCGSID}, {0, unix.TIOCNXCL}, {0, unix.TIOCGEXCL},
			{0, unix.TIOCGETD}, {0, unix.TCXONC}, {unix.TIOCCONS, 0}, {unix.TIOCSETD, 0}, {0, 0xaa01},
		} {
			if denies(rules, "ioctl", a...) {
				t.Errorf("ioctl %#x denied", a)
			}
		}
	}
}

// TestSeccompChroot: chroot goes with the mount calls: denied when
// allow_namespaces is false (a root caller's program has CAP_SYS_CHROOT),
// left alone with namespaces, where a program's own user namespace makes
// it ordinary.
func TestSeccompChroot(t *testing.T) {
	if !denies(seccompPlan(t, policy.StrictSeccompProfile(), policy.NetworkNone).Seccomp.Rules, "chroot") {
		t.Error("chroot allowed")
	}
	logging := policy.StrictSeccompProfile()
	logging.LogOnly = true
	if !denies(seccompPlan(t, logging, policy.NetworkNone).Seccomp.Rules, "chroot") {
		t.Error("chroot allowed under log_only")
	}
	open := policy.StrictSeccompProfile()
	open.AllowNamespaces = true
	if denies(seccompPlan(t, open, policy.NetworkNone).Seccomp.Rules, "chroot") {
		t.Error("chroot denied with allow_namespaces")
	}
}

// TestSeccompMountTwins: with allow_namespaces the profile's mount carries
// its twins (the new mount API, pivot_root) with it, blocked or logged as
// mount is; without mount in the list they stay open; a twin that is
// listed itself gets only its own rule.
func TestSeccompMountTwins(t *testing.T) {
	twins := []string{"pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"}
	withNS := func(list []string, logOnly bool) []policy.SyscallRule {
		return seccompPlan(t, policy.SeccompProfile{BlockedSyscalls: list, AllowNamespaces: true, LogOnly: logOnly}, policy.NetworkNone).Seccomp.Rules
	}

	// VT Code's list with allow_namespaces: mount is blocked, so are its
	// twins, right after the list.
	rules := withNS(append([]string(nil), policy.BlockedSyscalls...), false)
	at := 29 // VT Code's list: 31 names, iopl twice, umount not native
	if got := ruleNames(rules[at : at+len(twins)]); !reflect.DeepEqual(got, twins) {
		t.Fatalf("twins %q", got)
	}
	for _, r := range rules[at : at+len(twins)] {
		if r.Why != "blocked_syscalls[1] (mount): "+r.Syscall+" changes mounts another way, so it is blocked with mount" {
			t.Errorf("%+v", r)
		}
	}
	if denies(rules, "chroot") || denies(rules, "clone", unix.CLONE_NEWNS) {
		t.Error("allow_namespaces: chroot or clone(CLONE_NEWNS) denied")
	}

	// Without mount in the list the mount API is the program's.
	for _, r := range withNS([]string{"ptrace"}, false) {
		if slices.Contains(twins, r.Syscall) || r.Syscall == "mount" {
			t.Errorf("rule %+v", r)
		}
	}

	// log_only: logged with mount, never denied.
	rules = withNS([]string{"mount"}, true)
	if got := ruleNames(rules[:1+len(twins)]); !reflect.DeepEqual(got, append([]string{"mount/log"}, addSuffix(twins, "/log")...)) {
		t.Fatalf("logged %q", got)
	}
	for _, r := range rules[1 : 1+len(twins)] {
		if !strings.HasSuffix(r.Why, "logged and allowed because log_only is true") || denies(rules, r.Syscall) {
			t.Errorf("%+v", r)
		}
	}

	// A twin listed itself, before or after mount: its own rule only
	// (a second unconditional one would be refused by libseccomp).
	for _, list := range [][]string{{"fsmount", "mount"}, {"mount", "fsmount"}} {
		n := 0
		for _, r := range withNS(list, false) {
			if r.Syscall == "fsmount" {
				n++
				if !strings.HasPrefix(r.Why, "blocked_syscalls[") || strings.Contains(r.Why, "(mount)") {
					t.Errorf("%q: %+v", list, r)
				}
			}
		}
		if n != 1 {
			t.Errorf("%q: %d fsmount rules", list, n)
		}
	}

	// Without namespaces the strict model's own rules cover the twins:
	// none comes from the list.
	for _, r := range seccompPlan(t, policy.SeccompProfile{BlockedSyscalls: []string{"mount"}}, policy.NetworkNone).Seccomp.Rules {
		if strings.Contains(r.Why, "(mount)") {
			t.Errorf("twin rule without namespaces: %+v", r)
		}
	}
}

func addSuffix(names []string, suffix string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + suffix
	}
	return out
}

// TestSeccompMountTwinsTable: a twin of a listed mount that is not native
// is skipped with the reason; one the table does not know is an error.
func TestSeccompMountTwinsTable(t *testing.T) {
	prof := policy.SeccompProfile{BlockedSyscalls: []string{"ptrace", "mount"}, AllowNamespaces: true}
	table := testSyscalls()
	table["fspick"] = false
	plan, err := resolveSeccomp(t, &prof, policy.NetworkNone, table)
	if err != nil {
		t.Fatal(err)
	}
	sc := plan.Seccomp
	want := []policy.SkippedSyscall{{Syscall: "fspick", Why: "blocked_syscalls[1] (mount): fspick is its twin, but not a system call on this architecture"}}
	if !reflect.DeepEqual(sc.Skipped, want) {
		t.Errorf("skipped %+v", sc.Skipped)
	}
	for _, r := range sc.Rules {
		if r.Syscall == "fspick" {
			t.Errorf("rule %+v", r)
		}
	}

	delete(table, "fspick")
	if _, err := resolveSeccomp(t, &prof, policy.NetworkNone, table); err == nil || !strings.Contains(err.Error(), `"fspick", the twin of the listed mount, cannot be built`) {
		t.Errorf("got %v", err)
	}
}

func TestSeccompSocketRules(t *testing.T) {
	const high = 1 << 32
	tcp := uint64(unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK)
	for _, mode := range []policy.NetworkMode{policy.NetworkNone, policy.NetworkFull, policy.NetworkAllowlist} {
		t.Run(string(mode), func(t *testing.T) {
			prof := policy.StrictSeccompProfile()
			prof.AllowNetworkSockets = true
			rules := seccompPlan(t, prof, mode).Seccomp.Rules
			for fam := uint64(0); fam < 64; fam++ {
				allowed := fam == unix.AF_UNIX
				if mode != policy.NetworkNone {
					allowed = allowed || fam == unix.AF_INET || fam == unix.AF_INET6 || fam == unix.AF_NETLINK
				}
				if denies(rules, "socket", fam, unix.SOCK_STREAM, 0) == allowed {
					t.Errorf("family %d: allowed %v", fam, !allowed)
				}
				// High garbage bits never sneak past.
				if !denies(rules, "socket", fam|high, unix.SOCK_STREAM, 0) {
					t.Errorf("family %#x allowed", fam|high)
				}
			}
			if denies(rules, "socket", 1<<63|unix.AF_UNIX, unix.SOCK_STREAM, 0) == false {
				t.Error("family with bit 63 allowed")
			}
			if mode == policy.NetworkNone {
				return
			}
			for _, af := range []uint64{unix.AF_INET, unix.AF_INET6} {
				if denies(rules, "socket", af, tcp, 0) || denies(rules, "socket", af, unix.SOCK_DGRAM, 0) {
					t.Errorf("af %d tcp/udp denied", af)
				}
				for _, typ := range []uint64{unix.SOCK_RAW, unix.SOCK_PACKET, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.SOCK_RAW | high} {
					if !denies(rules, "socket", af, typ, 0) {
						t.Errorf("af %d type %#x allowed", af, typ)
					}
				}
				mptcp := denies(rules, "socket", af, tcp, unix.IPPROTO_MPTCP)
				if mptcp != (mode == policy.NetworkAllowlist) || denies(rules, "socket", af, tcp, unix.IPPROTO_MPTCP|high) != mptcp {
					t.Errorf("af %d MPTCP denied=%v in %s", af, mptcp, mode)
				}
			}
			if denies(rules, "socket", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE) {
				t.Error("NETLINK_ROUTE denied")
			}
			for _, proto := range []uint64{unix.NETLINK_AUDIT, unix.NETLINK_KOBJECT_UEVENT, high} {
				if !denies(rules, "socket", unix.AF_NETLINK, unix.SOCK_RAW, proto) {
					t.Errorf("netlink protocol %#x allowed", proto)
				}
			}
		})
	}
}

// TestSeccompRuleShape: libseccomp refuses a rule comparing one argument
// twice; every rule says why; errno rules name the errno.
func TestSeccompRuleShape(t *testing.T) {
	for _, mode := range []policy.NetworkMode{policy.NetworkNone, policy.NetworkFull, policy.NetworkAllowlist} {
		for _, prof := range []policy.SeccompProfile{
			{BlockedSyscalls: []string{}, AllowNetworkSockets: true},
			{BlockedSyscalls: []string{"ptrace"}, AllowNetworkSockets: true, LogOnly: true},
		} {
			for _, r := range seccompPlan(t, prof, mode).Seccomp.Rules {
				seen := map[uint]bool{}
				for _, c := range r.Args {
					if seen[c.Index] || c.Index > 5 {
						t.Errorf("rule %+v compares argument %d twice or out of range", r, c.Index)
					}
					seen[c.Index] = true
					if (c.Op == opMaskedEq) != (c.Mask != 0) || c.Value&^c.Mask != 0 && c.Op == opMaskedEq {
						t.Errorf("rule %+v: bad mask", r)
					}
				}
				if r.Why == "" || (r.Action == policy.ActionErrno) != (r.Errno != "") {
					t.Errorf("rule %+v", r)
				}
			}
		}
	}
}

func TestSeccompLogOnly(t *testing.T) {
	prof := policy.StrictSeccompProfile()
	prof.LogOnly = true
	sc := seccompPlan(t, prof, policy.NetworkNone).Seccomp
	if !sc.LogOnly {
		t.Fatal("flag")
	}
	logged := 0
	for _, r := range sc.Rules {
		if r.Action == policy.ActionLog {
			logged++
			if len(r.Args) != 0 || !strings.HasSuffix(r.Why, "logged and allowed because log_only is true") {
				t.Errorf("%+v", r)
			}
		}
	}
	// 29 listed calls; unshare, setns, mount and umount2 have structural
	// rules, which an unconditional log rule would override: not logged.
	if logged != 25 {
		t.Errorf("%d log rules", logged)
	}
	var notLogged []string
	for _, sk := range sc.Skipped {
		if strings.Contains(sk.Why, "log_only is true, but the strict model's rules for it still deny") {
			notLogged = append(notLogged, sk.Syscall)
		}
	}
	if !reflect.DeepEqual(notLogged, []string{"mount", "umount2", "unshare", "setns"}) {
		t.Errorf("not logged: %v (%+v)", notLogged, sc.Skipped)
	}
	// The structural rules are not relaxed.
	if !denies(sc.Rules, "unshare", unix.CLONE_NEWUSER) || !denies(sc.Rules, "setns") || !denies(sc.Rules, "clone", unix.CLONE_NEWNET) ||
		!denies(sc.Rules, "socket", unix.AF_INET) || !denies(sc.Rules, "io_uring_setup") {
		t.Error("structural rule relaxed by log_only")
	}
}

func TestSeccompUserBlockedStructural(t *testing.T) {
	prof := policy.SeccompProfile{BlockedSyscalls: []string{"socket", "ioctl", "clone3", "socket"}}
	rules := seccompPlan(t, prof, policy.NetworkNone).Seccomp.Rules
	for _, r := range rules {
		if (r.Syscall == "socket" || r.Syscall == "ioctl" || r.Syscall == "clone3") && (len(r.Args) > 0 || r.Errno != "EPERM") {
			t.Errorf("redundant rule %+v", r)
		}
	}
	// listed, clone, io_uring, unshare, setns, mount API, chroot,
	// open_by_handle_at, host calls
	if n := len(ruleNames(rules)); n != 3+7+3+8+1+10+1+1+8 {
		t.Errorf("%d rules: %q", n, ruleNames(rules))
	}
}

func TestSeccompNotNativeStructural(t *testing.T) {
	table := testSyscalls()
	table["io_uring_setup"] = false
	table["clone3"] = false
	plan, err := resolveSeccomp(t, nil, policy.NetworkNone, table)
	if err != nil {
		t.Fatal(err)
	}
	sc := plan.Seccomp
	for _, r := range sc.Rules {
		if r.Syscall == "io_uring_setup" || r.Syscall == "clone3" {
			t.Errorf("rule for a non-native call: %+v", r)
		}
	}
	var skipped []string
	for _, s := range sc.Skipped {
		skipped = append(skipped, s.Syscall)
	}
	if !reflect.DeepEqual(skipped, []string{"umount", "clone3", "io_uring_setup"}) {
		t.Errorf("skipped %+v", sc.Skipped)
	}
}

// TestSeccompStructuralUnknownToTheTable: a strict-model rule whose call
// the syscall table does not know at all (an older libseccomp) is an
// error, not a rule quietly left out.
func TestSeccompStructuralUnknownToTheTable(t *testing.T) {
	table := testSyscalls()
	delete(table, "io_uring_setup")
	if _, err := resolveSeccomp(t, nil, policy.NetworkNone, table); err == nil || !strings.Contains(err.Error(), `"io_uring_setup" cannot be built`) {
		t.Errorf("got %v", err)
	}
}
