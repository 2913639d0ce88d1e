package spawn

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
)

// initRequest runs script as PID 2 of a new PID namespace with its own
// /proc, with the init as PID 1, writing to the kept fd of the file it
// returns.
func initRequest(t *testing.T, script string) (*Request, *os.File) {
	t.Helper()
	if os.Getuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root: a PID and mount namespace without a user namespace")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fd := strconv.Itoa(int(f.Fd()))
	return &Request{
		Paths: []string{"/bin/sh"}, Argv: []string{"sh", "-c", "exec >&" + fd + "; " + script}, Env: []string{"PATH=/usr/bin:/bin"},
		KeepFDs:        []int{int(f.Fd())},
		NamespaceFlags: unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS,
		UnshareFlags:   unix.CLONE_NEWCGROUP,
		Init:           true, DropCapabilities: true,
		Ops: []Op{
			MakePrivate("/", "make / private"),
			MountNew("proc", "/proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "", "proc"),
		},
		CgroupFD: -1, RulesetFD: -1, NotifySock: -1,
	}, f
}

// runInit starts req, waits for the init and returns its status and the
// program's as the init recorded it.
func runInit(t *testing.T, req *Request) (init, prog unix.WaitStatus, ok bool) {
	t.Helper()
	p, err := Start(req)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p.PidFD)
	if _, err := unix.Wait4(p.Pid, &init, 0, nil); err != nil {
		t.Fatal(err)
	}
	prog, ok = p.Status()
	return init, prog, ok
}

func TestInitRunsProgramAsPID2(t *testing.T) {
	req, f := initRequest(t, `echo "pid $$ ppid $PPID"; ls /proc | grep -c '^[0-9]'; grep -E '^Cap(Eff|Prm|Inh|Bnd|Amb)' /proc/self/status; exit 3`)
	st, prog, ok := runInit(t, req)
	if !ok || prog.ExitStatus() != 3 || st.ExitStatus() != 3 {
		t.Fatalf("program status %v (recorded %v), init status %v: want exit 3", prog, ok, st)
	}
	b, _ := os.ReadFile(f.Name())
	out := string(b)
	if !strings.HasPrefix(out, "pid 2 ppid 1\n") {
		t.Fatalf("output %q: want the program as PID 2, child of the init", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// ls itself, the shell and the init: only the namespace's processes.
	if n, _ := strconv.Atoi(lines[1]); n < 2 || n > 4 {
		t.Fatalf("%s processes in /proc: want only the namespace's (output %q)", lines[1], out)
	}
	caps := lines[2:]
	if len(caps) != 5 {
		t.Fatalf("capability lines %q", caps)
	}
	for _, c := range caps {
		if !strings.HasSuffix(c, "0000000000000000") {
			t.Errorf("%s: want no capability", c)
		}
	}
}

func TestInitProgramKilledBySignal(t *testing.T) {
	req, _ := initRequest(t, `kill -TERM $$`)
	_, prog, ok := runInit(t, req)
	if !ok || !prog.Signaled() || prog.Signal() != unix.SIGTERM {
		t.Fatalf("program status %v (recorded %v): want killed by SIGTERM", prog, ok)
	}
}

func TestInitForwardsSignalsAndEndsTheNamespace(t *testing.T) {
	// A daemon that outlives the shell must not outlive the init.
	req, f := initRequest(t, `setsid sleep 1000 & echo $! ; trap 'echo got-usr1; exit 9' USR1; echo ready; while :; do sleep 0.05; done`)
	p, err := Start(req)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p.PidFD)
	for i := 0; i < 200; i++ {
		if b, _ := os.ReadFile(f.Name()); strings.Contains(string(b), "ready") {
			break
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 20e6}, nil)
	}
	if err := unix.Kill(p.Pid, unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var st unix.WaitStatus
	if _, err := unix.Wait4(p.Pid, &st, 0, nil); err != nil {
		t.Fatal(err)
	}
	prog, ok := p.Status()
	b, _ := os.ReadFile(f.Name())
	if !ok || prog.ExitStatus() != 9 || !strings.Contains(string(b), "got-usr1") {
		t.Fatalf("program status %v (recorded %v), output %q: want the forwarded SIGUSR1 handled, exit 9", prog, ok, b)
	}
	// The init is reaped only once its namespace is empty: no sleep 1000.
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(cl) == "sleep\x001000\x00" {
			t.Fatalf("the daemon (pid %s) outlived the namespace", e.Name())
		}
	}
}

// TestInitUnshareRefusedFailsTheStart: an init is cloned into the user and
// PID namespaces only and makes the others itself (unshare) once it runs,
// so that their cost is not its caller's wait. Where unshare is refused
// while such a clone is not (here a seccomp filter on the test's child
// process), the start fails at the clone step, saying that the init's
// unshare did, and the program never runs.
func TestInitUnshareRefusedFailsTheStart(t *testing.T) {
	if os.Getenv("SE_INIT_UNSHARE_CHILD") == "" {
		if os.Getuid() != 0 {
			testcap.Skipf(t, testcap.Root, "needs root: a PID and mount namespace without a user namespace")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestInitUnshareRefusedFailsTheStart$", "-test.v")
		cmd.Env = append(os.Environ(), "SE_INIT_UNSHARE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestInitUnshareRefusedFailsTheStart") {
			t.Fatalf("the child did not pass (%v):\n%s", err, out)
		}
		return
	}
	req, f := initRequest(t, "echo ran")
	filter, err := libseccomp.NewFilter(libseccomp.ActAllow)
	if err != nil {
		t.Fatal(err)
	}
	defer filter.Release()
	unshare, err := libseccomp.GetSyscallFromName("unshare")
	if err != nil {
		t.Fatal(err)
	}
	if err := filter.AddRule(unshare, libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM))); err != nil {
		t.Fatal(err)
	}
	// The filter holds on this thread, which Start clones from.
	runtime.LockOSThread()
	if err := filter.Load(); err != nil {
		t.Fatal(err)
	}
	p, err := Start(req)
	var se *Error
	if !errors.As(err, &se) || se.Step != StepClone || se.Errno != unix.EPERM || se.Detail != "the init's unshare" {
		t.Fatalf("Start: %v, want the clone step failed by the init's unshare (EPERM)", err)
	}
	var st unix.WaitStatus
	if _, err := unix.Wait4(p.Pid, &st, 0, nil); err != nil || st.ExitStatus() != 125 {
		t.Fatalf("the init: %v %v, want exit 125", err, st)
	}
	if b, _ := os.ReadFile(f.Name()); len(b) != 0 {
		t.Errorf("the program ran: %q", b)
	}
}
