package spawn

import (
	"errors"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
)

// The tests here show that what Go decides for the C stage is what the
// stage does: each changes one decision away from its default and watches
// the kernel object or the exit status that comes out.

// TestExitCodesComeFromGo: the child exits with the codes of exitRules, not
// with codes of its own; ExitCode says the same.
func TestExitCodesComeFromGo(t *testing.T) {
	saved := exitRules
	t.Cleanup(func() { exitRules = saved })
	exitRules = []exitRule{{StepExec, unix.ENOENT, 71}, {StepOp, 0, 72}, {StepNone, 0, 73}}
	for _, c := range []struct {
		name string
		req  Request
		want int
	}{
		{"not found", Request{Paths: []string{"/nonexistent/prog"}, Argv: []string{"prog"}}, 71},
		{"setup", Request{Paths: []string{"/bin/true"}, Argv: []string{"true"}, Ops: []Op{Chdir("/nonexistent/dir", "chdir")}}, 72},
		{"not executable", Request{Paths: []string{"/etc/passwd"}, Argv: []string{"passwd"}}, 73},
	} {
		st, _, err := run(t, &c.req)
		var se *Error
		if !errors.As(err, &se) {
			t.Fatalf("%s: err %v", c.name, err)
		}
		if st.ExitStatus() != c.want || se.ExitCode() != c.want {
			t.Errorf("%s: child exited %d, ExitCode %d, want %d (%v)", c.name, st.ExitStatus(), se.ExitCode(), c.want, err)
		}
	}
}

// TestDefaultExitCodes pins the table to the contract's 127, 126 and 125.
func TestDefaultExitCodes(t *testing.T) {
	for _, c := range []struct {
		step  Step
		errno syscall.Errno
		want  int
	}{
		{StepExec, unix.ENOENT, 127}, {StepExec, unix.ENOTDIR, 127}, {StepExec, unix.EACCES, 126},
		{StepOp, unix.ENOENT, 125}, {StepClone, unix.ENOSYS, 125}, {StepInit, 0, 125},
	} {
		if got := (&Error{Step: c.step, Errno: c.errno}).ExitCode(); got != c.want {
			t.Errorf("%s %v: %d, want %d", c.step, c.errno, got, c.want)
		}
	}
}

// TestListenerAddressAndBacklogFromGo: the handed-over socket listens on the
// address and with the backlog the op names (TCP_INFO reports a listener's
// backlog in tcpi_sacked).
func TestListenerAddressAndBacklogFromGo(t *testing.T) {
	pair := proxyPair(t)
	addr := netip.MustParseAddr("127.0.0.2")
	st, _, err := run(t, &Request{Paths: []string{"/bin/true"}, Argv: []string{"true"}, NamespaceFlags: unix.CLONE_NEWNET,
		Ops: []Op{LoopbackUp("lo up"), ListenOnAndHandOver(addr, 4711, 7, "listener")}, ProxySock: pair[1]})
	if err != nil || st.ExitStatus() != 0 {
		t.Fatalf("child: %v %v", err, st)
	}
	fd, err := receiveFD(pair[0])
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in, ok := sa.(*unix.SockaddrInet4)
	if !ok || netip.AddrFrom4(in.Addr) != addr || in.Port != 4711 {
		t.Errorf("listening on %#v, want %v:4711", sa, addr)
	}
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != 10 /* TCP_LISTEN */ || info.Sacked != 7 {
		t.Errorf("state %d, backlog %d; want a listener with backlog 7", info.State, info.Sacked)
	}
}

// proxyPair is the unix socket pair a listener is handed over on, for a
// test that may make a network namespace (root only).
func proxyPair(t *testing.T) [2]int {
	t.Helper()
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs CAP_SYS_ADMIN for a network namespace")
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(pair[0]); unix.Close(pair[1]) })
	return pair
}

// withClone3Refused runs f on a thread of its own whose seccomp filter
// answers clone3 with ENOSYS, as an old kernel or a container's filter
// does; the thread ends with f (it is never unlocked).
func withClone3Refused(t *testing.T, f func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// ld [nr]; jeq clone3 ? errno(ENOSYS) : allow
		prog := []unix.SockFilter{
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: 435},
			{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
			{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		}
		fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- err
			return
		}
		if _, _, e := unix.Syscall(unix.SYS_SECCOMP, 1 /* SET_MODE_FILTER */, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
			done <- e
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("refusing clone3: %v", err)
	}
}

// TestCloneFallbackIsGosChoice: without clone3, a child that need not be
// born into a cgroup comes from the legacy clone (no pidfd), an init's
// program too; one that must be born into a cgroup it has no other way to
// join is not started at all.
func TestCloneFallbackIsGosChoice(t *testing.T) {
	withClone3Refused(t, func() {
		p, err := Start(&Request{Paths: []string{"/bin/true"}, Argv: []string{"true"}, CgroupFD: -1, RulesetFD: -1, NotifySock: -1})
		if err != nil {
			t.Errorf("fallback child: %v", err)
		} else {
			if p.PidFD != -1 {
				t.Errorf("pidfd %d: not the legacy clone", p.PidFD)
				unix.Close(p.PidFD)
			}
			var ws unix.WaitStatus
			if _, err := unix.Wait4(p.Pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
				t.Errorf("fallback child: %v %v", err, ws)
			}
		}

		dir, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer unix.Close(dir)
		p, err = Start(&Request{Paths: []string{"/bin/true"}, Argv: []string{"true"}, CgroupFD: dir, RulesetFD: -1, NotifySock: -1})
		var se *Error
		if !errors.As(err, &se) || se.Step != StepClone || se.Errno != unix.ENOSYS {
			t.Errorf("a child to be born into a cgroup without clone3: %v, want clone: ENOSYS", err)
			if p != nil {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(p.Pid, &ws, 0, nil)
			}
		}

		if os.Geteuid() == 0 {
			p, err = Start(&Request{Paths: []string{"/bin/true"}, Argv: []string{"true"}, CgroupFD: -1, RulesetFD: -1, NotifySock: -1,
				Init: true, NamespaceFlags: unix.CLONE_NEWPID})
			if err != nil {
				t.Errorf("init without clone3: %v", err)
				return
			}
			var ws unix.WaitStatus
			_, _ = unix.Wait4(p.Pid, &ws, 0, nil)
			if s, ok := p.Status(); !ok || s.ExitStatus() != 0 || p.PidFD != -1 {
				t.Errorf("init's program: %v %v, pidfd %d", s, ok, p.PidFD)
			}
		}
	})
}
