package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// split runs the file work bare, under a seccomp filter of one allow rule,
// under Landlock only (every file access handled, one rule granting all of
// them below /), under both, and under the helper: what the kernel charges
// for having each on, against what the helper adds.
func split(ws string) {
	self, err := os.Executable()
	check(err)
	conf := func(what string) contender {
		return contender{name: what, wrap: func(a []string) []string { return append([]string{self, "confine", "-with", what, "--"}, a...) }}
	}
	cs := []contender{{name: "bare", wrap: func(a []string) []string { return a }}, conf("seccomp"), conf("landlock"), conf("seccomp+landlock"),
		{name: "sandbox-executable", wrap: func(a []string) []string { return ours(ws, a...) }}}
	fmt.Printf("\nfile work under the kernel's mechanisms alone, without the supervisor (work alone: the same round's /bin/true under the same wrapper taken away)\n\n")
	fmt.Printf("%-24s %6s", "item", "rounds")
	for _, c := range cs[1:] {
		fmt.Printf("  %18s", c.name)
	}
	fmt.Printf("   (median ratio to bare, pair by pair; bare's median ms)\n")
	names := []string{"open", "stat"}
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "work" { // -work given: its items, the real work too
			names = strings.Split(*work, ",")
		}
	})
	for _, w := range names {
		it, ok := workItem(ws, strings.TrimSpace(w))
		if !ok {
			continue
		}
		it.rounds = max(2, int(float64(it.rounds)**scale))
		ss, err := measure(cs, it)
		if err != nil {
			fmt.Printf("%-24s failed: %v\n", it.name, err)
			continue
		}
		fmt.Printf("%-24s %6d", it.name, len(ss))
		var bare []float64
		for _, s := range ss {
			bare = append(bare, ms(s.work[0]-s.base[0]))
		}
		for j := 1; j < len(cs); j++ {
			var rs []float64
			for _, s := range ss {
				rs = append(rs, ms(s.work[j]-s.base[j])/ms(s.work[0]-s.base[0]))
			}
			st := summarize(rs)
			fmt.Printf("  %11.3fx p90 %.2f", st.med, st.p90)
		}
		fmt.Printf("   %s ms\n", num(summarize(bare).med))
	}
}

// confineMain is `bench confine -with seccomp|landlock|seccomp+landlock --
// PROGRAM ARGS...`: it turns the mechanisms on in this process and execs
// PROGRAM.
func confineMain(args []string) {
	fs := flag.NewFlagSet("confine", flag.ExitOnError)
	with := fs.String("with", "", "seccomp, landlock or seccomp+landlock")
	check(fs.Parse(args))
	argv := fs.Args()
	if len(argv) == 0 {
		check(fmt.Errorf("confine: no program"))
	}
	runtime.LockOSThread()
	check(unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
	if strings.Contains(*with, "landlock") {
		check(landlockAll())
	}
	if strings.Contains(*with, "seccomp") {
		check(seccompAllow())
	}
	path, err := exec.LookPath(argv[0]) // the real work names its program by name
	check(err)
	check(syscall.Exec(path, argv, os.Environ()))
}

// seccompAllow installs a filter whose one rule allows every call: the
// kernel's action cache then skips the BPF for every call, as it does for
// the helper's constant-allow calls, so what remains is seccomp's entry
// cost.
func seccompAllow() error {
	prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fp))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}

// landlockAll restricts this thread with a ruleset handling every file
// access the kernel knows and one rule granting all of them below /:
// nothing is refused, but every open is checked.
func landlockAll() error {
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return fmt.Errorf("landlock: %w", e)
	}
	var handled uint64 = 1<<13 - 1 // ABI 1
	if abi >= 2 {
		handled |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		handled |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		handled |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 8, 0) // handled_access_fs alone: every ABI takes it
	if e != 0 {
		return fmt.Errorf("landlock ruleset: %w", e)
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: handled, Parent_fd: int32(root)}
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
		return fmt.Errorf("landlock rule: %w", e)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("landlock restrict: %w", e)
	}
	return nil
}
