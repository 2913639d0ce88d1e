package spawn

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tests of this package carry runs out the one way every run is
// carried out: a recipe (Encode) given to the runner (RunRecipe), which
// starts the program through the stage and ends its process with the
// run's exit code. So each run is a child of the test: this test binary
// again, which TestMain turns into the run's helper when recipeChildEnv
// names what to carry out. The test looks at that child's exit status, its
// output and what the program left behind.

// recipeChildEnv holds, in a test's child, the JSON of its childRun.
const recipeChildEnv = "SE_SPAWN_TEST_RUN"

// childRun is what a test's child carries out.
type childRun struct {
	// Recipe is the file that holds the recipe (Encode's bytes), Argv
	// the program's arguments.
	Recipe string
	Argv   []string
	// Serve is what the child's Go does when the runner calls on it
	// (serveTest); "" for nothing but the end.
	Serve string
	// RefuseNr, when set, is a system call that the thread the runner
	// runs on answers with RefuseErrno (a seccomp filter, which the
	// children it clones inherit): what a kernel or a container's filter
	// refuses.
	RefuseNr, RefuseErrno int
	// Result is the file the child writes RunRecipe's Return to (JSON)
	// when it returns: no program ran.
	Result string
	// Hold, when set, is a file the child's Go writes a while after the
	// run starts, holding the helper's exit until then (Service.Hold), as
	// the helper does while it stores a recipe.
	Hold string
	// Sweep, when set, is a placeholder registry the child's Go sweeps
	// beside the run (SweepPlaceholders), as the helper does: RunRecipe
	// starts once the sweep holds the lock of the group SweepGroup, and
	// the child says so by making the file Sweeping.
	Sweep, SweepGroup, Sweeping string
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(recipeChildEnv); spec != "" {
		os.Exit(recipeChild(spec))
	}
	os.Exit(m.Run())
}

// recipeChild carries out the run spec names as the helper does
// (cmd/sandbox-executable: runOnce): with a service that Go serves, on a
// thread of its own. Once the program runs the runner ends this process
// with the run's code; when RunRecipe returns nothing ran, and the child
// exits as the helper does then: with the exit rules' code for a child
// that failed a step of its own, 125 otherwise.
func recipeChild(spec string) int {
	var c childRun
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, "test child:", err)
		return 2
	}
	recipe, err := os.ReadFile(c.Recipe)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test child:", err)
		return 2
	}
	svc, err := NewService()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test child:", err)
		return 2
	}
	go serveTest(svc, c.Serve)
	if c.Hold != "" {
		release, err := svc.Hold()
		if err != nil {
			fmt.Fprintln(os.Stderr, "test child:", err)
			return 2
		}
		go func() {
			defer release()
			// Long past a plain program's end: an exit that did not
			// wait would come first.
			time.Sleep(500 * time.Millisecond)
			_ = os.WriteFile(c.Hold, []byte("done"), 0o600)
		}()
	}
	if c.Sweep != "" {
		go SweepPlaceholders(c.Sweep)
		if err := waitLockedExclusively(filepath.Join(c.SweepGroup, "lock")); err != nil {
			fmt.Fprintln(os.Stderr, "test child:", err)
			return 2
		}
		if err := os.WriteFile(c.Sweeping, nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "test child:", err)
			return 2
		}
	}
	// The thread RunRecipe runs on (it locks it too): the refusal must
	// hold there.
	runtime.LockOSThread()
	if c.RefuseNr != 0 {
		if err := refuseOnThisThread(c.RefuseNr, c.RefuseErrno); err != nil {
			fmt.Fprintln(os.Stderr, "test child: refusing a call:", err)
			return 2
		}
	}
	ret, err := RunRecipe(recipe, c.Argv, svc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test child:", err)
		return 2
	}
	b, _ := json.Marshal(ret)
	if err := os.WriteFile(c.Result, b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "test child:", err)
		return 2
	}
	if ret.Reason == ReturnFailed {
		return ret.ExitCode
	}
	return 125
}

// waitLockedExclusively waits until one of this process's descriptors
// (the sweep runs here) holds an exclusive flock on the file at path, as
// its fdinfo lists it: looking, unlike trying the lock, never keeps its
// holder from taking it. Matching by the descriptor's path, not by the
// device and inode /proc/locks prints, holds on an overlay too, whose
// stat gives another device than its locks carry.
func waitLockedExclusively(path string) error {
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return err
		}
		for _, fd := range fds {
			if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err != nil || target != path {
				continue
			}
			info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
			if err != nil {
				continue
			}
			// "lock:\t1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
			for _, line := range strings.Split(string(info), "\n") {
				f := strings.Fields(line)
				if len(f) > 4 && f[0] == "lock:" && f[2] == "FLOCK" && f[4] == "WRITE" {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("no exclusive flock on %s", path)
}

// serveTest is the child's Go while the program runs: what a test's run
// asks of it (mode), then the end answered. What it sees it says on
// stderr.
func serveTest(svc *Service, mode string) {
	for ev := range svc.Events {
		switch ev {
		case EventProxy:
			fd := svc.ProxyListener()
			switch mode {
			case "proxy-echo":
				// Read a line from whoever connects, answer "ok".
				f := os.NewFile(uintptr(fd), "listener")
				l, err := net.FileListener(f)
				f.Close()
				if err != nil {
					fmt.Fprintln(os.Stderr, "listener:", err)
					svc.Fail()
					continue
				}
				go func() {
					defer l.Close()
					c, err := l.Accept()
					if err != nil {
						fmt.Fprintln(os.Stderr, "accept:", err)
						return
					}
					defer c.Close()
					buf := make([]byte, 64)
					n, _ := c.Read(buf)
					fmt.Fprintf(os.Stderr, "proxy read %q\n", buf[:n])
					_, _ = c.Write([]byte("ok\n"))
				}()
			case "listener-info":
				fmt.Fprintln(os.Stderr, listenerInfo(fd))
				unix.Close(fd)
			}
		case EventEnded:
			svc.Done()
			return
		}
	}
}

// listenerInfo says where the socket fd listens, and with what backlog
// (TCP_INFO reports a listener's in tcpi_sacked).
func listenerInfo(fd int) string {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return err.Error()
	}
	in, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return fmt.Sprintf("not IPv4: %#v", sa)
	}
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("listening on %v state %d backlog %d", netip.AddrPortFrom(netip.AddrFrom4(in.Addr), uint16(in.Port)), info.State, info.Sacked)
}

// refuseOnThisThread makes this thread (and what it clones from now on)
// answer system call nr with errno: a seccomp filter of its own, as an
// old kernel or a container's filter answers.
func refuseOnThisThread(nr, errno int) error {
	// ld [nr]; jeq nr ? errno : allow
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: uint32(nr)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(errno)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}

// runOpts are a test run's settings besides its recipe and argv.
type runOpts struct {
	serve                 string
	hold                  string
	refuseNr, refuseErrno int
	// sweep and sweepGroup are the child's Sweep and SweepGroup.
	sweep, sweepGroup string
	// extra are the child's descriptors from 3 on (exec.Cmd.ExtraFiles):
	// inherited as a caller's would be, not close-on-exec.
	extra []*os.File
}

// recipeRun is a test's child carrying a run out.
type recipeRun struct {
	t                      *testing.T
	cmd                    *exec.Cmd
	stdout, stderr, result string
	// sweeping is the child's Sweeping.
	sweeping string
}

// runEnd is how a test's child ended.
type runEnd struct {
	// Code is its exit status: the run's.
	Code           int
	Stdout, Stderr string
	// Ret is RunRecipe's answer where it returned (no program ran).
	Ret *Return
}

// startRecipe starts a child that carries out r for argv.
func startRecipe(t *testing.T, r *Recipe, argv []string, o runOpts) *recipeRun {
	t.Helper()
	dir := t.TempDir()
	run := &recipeRun{t: t, stdout: filepath.Join(dir, "stdout"), stderr: filepath.Join(dir, "stderr"), result: filepath.Join(dir, "result"),
		sweeping: filepath.Join(dir, "sweeping")}
	recipe := filepath.Join(dir, "recipe")
	if err := os.WriteFile(recipe, r.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	spec, err := json.Marshal(childRun{Recipe: recipe, Argv: argv, Serve: o.serve, RefuseNr: o.refuseNr, RefuseErrno: o.refuseErrno, Result: run.result, Hold: o.hold,
		Sweep: o.sweep, SweepGroup: o.sweepGroup, Sweeping: run.sweeping})
	if err != nil {
		t.Fatal(err)
	}
	// Files, not pipes: whatever the program leaves running cannot keep
	// the test waiting for their end.
	out, err := os.Create(run.stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errf, err := os.Create(run.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	run.cmd = exec.Command(os.Args[0])
	run.cmd.Env = append(os.Environ(), recipeChildEnv+"="+string(spec), WarmOff+"=off")
	run.cmd.Stdout, run.cmd.Stderr, run.cmd.ExtraFiles = out, errf, o.extra
	if err := run.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return run
}

// wait waits for the child's end.
func (run *recipeRun) wait() runEnd {
	t := run.t
	t.Helper()
	err := run.cmd.Wait()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	end := runEnd{Code: run.cmd.ProcessState.ExitCode(), Stdout: readFile(t, run.stdout), Stderr: readFile(t, run.stderr)}
	if b, err := os.ReadFile(run.result); err == nil {
		end.Ret = new(Return)
		if err := json.Unmarshal(b, end.Ret); err != nil {
			t.Fatal(err)
		}
	}
	if end.Code == 2 && strings.HasPrefix(end.Stderr, "test child:") {
		t.Fatalf("%s", end.Stderr)
	}
	return end
}

// runRecipe carries out r for argv in a child and returns how it ended.
func runRecipe(t *testing.T, r *Recipe, argv []string, o runOpts) runEnd {
	t.Helper()
	return startRecipe(t, r, argv, o).wait()
}

// outputSoFar is what the program has written to stdout so far.
func (run *recipeRun) outputSoFar() string { return readFile(run.t, run.stdout) }

// children are the pids of the child's children (the runner's init).
func (run *recipeRun) children() []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	want := "\nPPid:\t" + strconv.Itoa(run.cmd.Process.Pid) + "\n"
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/status"); err == nil && strings.Contains(string(b), want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// program is a recipe for a plain child (no namespace, no init): what
// every run's child gets, and nothing the host must allow.
func program() *Recipe {
	return &Recipe{Env: []string{"PATH=/usr/bin:/bin"}, PathDirs: []string{"/usr/bin", "/bin"},
		CloneFallback: true, ProgCloneFallback: true,
		CPUUsage: NoCounter, OOMKills: NoCounter, PidsHits: NoCounter}
}

// failure is the Return's failure, in the words of r's step (argv0 the
// program's name), or nil when the runner did not return.
func (e runEnd) failure(r *Recipe, argv0 string) *Error {
	if e.Ret == nil {
		return nil
	}
	return e.Ret.Error(r, argv0)
}

// TestExitWaitsForHeldWork: work Go holds the helper's exit for
// (Service.Hold: the first run's store, made while its program runs) is
// done before the helper exits, however soon the program ends.
func TestExitWaitsForHeldWork(t *testing.T) {
	held := filepath.Join(t.TempDir(), "held")
	end := runRecipe(t, program(), []string{"/bin/true"}, runOpts{hold: held})
	if end.Code != 0 {
		t.Fatalf("exit %d, stderr %q", end.Code, end.Stderr)
	}
	if _, err := os.Stat(held); err != nil {
		t.Fatalf("the helper exited before the work it held was done: %v", err)
	}
}
