package spawn

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
)

// initRecipe runs its program as PID 2 of a new PID namespace with its own
// /proc, with the init as PID 1, as a run with an isolated process world
// does.
func initRecipe(t *testing.T) *Recipe {
	t.Helper()
	if os.Getuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root: a PID and mount namespace without a user namespace")
	}
	r := program()
	r.Init, r.DropCapabilities, r.Pdeathsig = true, true, unix.SIGKILL
	r.NamespaceFlags = unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS
	r.UnshareFlags = unix.CLONE_NEWCGROUP
	r.Ops = []Op{
		MakePrivate("/", "make / private"),
		MountNew("proc", "/proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "", "proc"),
	}
	return r
}

func TestInitRunsProgramAsPID2(t *testing.T) {
	script := `echo "pid $$ ppid $PPID"; ls /proc | grep -c '^[0-9]'; grep -E '^Cap(Eff|Prm|Inh|Bnd|Amb)' /proc/self/status; exit 3`
	end := runRecipe(t, initRecipe(t), []string{"/bin/sh", "-c", script}, runOpts{})
	if end.Code != 3 {
		t.Fatalf("exit %d (%+v): want the program's 3", end.Code, end.Ret)
	}
	out := end.Stdout
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

// TestInitProgramKilledBySignal: the run of a program killed by signal N
// ends with 128+N.
func TestInitProgramKilledBySignal(t *testing.T) {
	end := runRecipe(t, initRecipe(t), []string{"/bin/sh", "-c", "kill -TERM $$"}, runOpts{})
	if end.Code != 128+int(unix.SIGTERM) {
		t.Fatalf("exit %d (%+v): want 128+SIGTERM", end.Code, end.Ret)
	}
}

// TestInitForwardsSignalsAndEndsTheNamespace: a signal sent to the init
// from outside its namespace reaches the program, and the program's end
// ends everything left in the namespace.
func TestInitForwardsSignalsAndEndsTheNamespace(t *testing.T) {
	// A daemon that outlives the shell must not outlive the init; its
	// command line is this test process's own.
	daemon := strconv.Itoa(1000000 + os.Getpid())
	script := `setsid sleep ` + daemon + ` & trap 'echo got-usr1; exit 9' USR1; echo ready; while :; do sleep 0.05; done`
	r := initRecipe(t)
	// A signal that never arrives ends the run (exit 124), not the test.
	r.Timeout, r.Grace = time.Minute, time.Second
	run := startRecipe(t, r, []string{"/bin/sh", "-c", script}, runOpts{})
	for i := 0; i < 1000 && !strings.Contains(run.outputSoFar(), "ready"); i++ {
		_ = unix.Nanosleep(&unix.Timespec{Nsec: 20e6}, nil)
	}
	inits := run.children()
	if len(inits) != 1 {
		_ = run.cmd.Process.Kill()
		t.Fatalf("the runner's children: %v, want its init alone (output %q)", inits, run.outputSoFar())
	}
	if err := unix.Kill(inits[0], unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	end := run.wait()
	if end.Code != 9 || !strings.Contains(end.Stdout, "got-usr1") {
		t.Fatalf("exit %d, output %q: want the forwarded SIGUSR1 handled, exit 9", end.Code, end.Stdout)
	}
	// The init is reaped only once its namespace is empty.
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(cl) == "sleep\x00"+daemon+"\x00" {
			t.Fatalf("the daemon (pid %s) outlived the namespace", e.Name())
		}
	}
}

// TestInitUnshareRefusedFailsTheStart: an init is cloned into the user and
// PID namespaces only and makes the others itself (unshare) once it runs,
// so that their cost is not its caller's wait. Where unshare is refused
// while such a clone is not (here a seccomp filter on the runner's
// thread), the start fails at the clone step, saying that the init's
// unshare did, and the program never runs.
func TestInitUnshareRefusedFailsTheStart(t *testing.T) {
	r := initRecipe(t)
	end := runRecipe(t, r, []string{"/bin/echo", "ran"}, runOpts{refuseNr: unix.SYS_UNSHARE, refuseErrno: int(unix.EPERM)})
	se := end.failure(r, "/bin/echo")
	if end.Code != 125 || se == nil || se.Step != StepClone || se.Errno != unix.EPERM || se.Detail != "the init's unshare" {
		t.Fatalf("exit %d, failure %v (%+v): want 125, the clone step failed by the init's unshare (EPERM)", end.Code, se, end.Ret)
	}
	if end.Stdout != "" {
		t.Errorf("the program ran: %q", end.Stdout)
	}
}

// TestSweepBesideARunLeavesItsClaimFree: the helper's Go sweeps the
// placeholder registry beside the run, on another thread, while the runner
// clones the init, and the init keeps a copy of the process's fd table
// until the program runs. A group lock the sweep held at that clone stayed
// held by the init's copy, and the run's own claim of the group waited for
// it until it gave up: "placeholder registry: connection timed out". Here
// the sweep holds the group's lock while it waits for the group's decide
// lock, which the test holds until the init is there (or a while has
// passed: an init cloned only after the sweep let go never comes before).
func TestSweepBesideARunLeavesItsClaimFree(t *testing.T) {
	r := initRecipe(t)
	ws := t.TempDir()
	reg, group := placeholderGroup(t, ws)
	decide := lockDecisions(t, group)
	r.Claims = []RecipeClaim{{Parent: ws, Dir: group}}
	run := startRecipe(t, r, []string{"/bin/true"}, runOpts{sweep: reg, sweepGroup: group})
	run.waitFile(run.sweeping, "the sweep never took the group's lock")
	for deadline := time.Now().Add(2 * time.Second); len(run.children()) == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	decide.Close()
	end := run.wait()
	if end.Code != 0 {
		t.Fatalf("exit %d (%v, stderr %q): want the program's 0, its claim free once the sweep is done", end.Code, end.failure(r, "/bin/true"), end.Stderr)
	}
}

// placeholderGroup makes the registry group of the placeholders in ws, as
// a run's claim does, in a registry of its own: "dir", "lock", "decide".
func placeholderGroup(t *testing.T, ws string) (registry, group string) {
	t.Helper()
	registry = t.TempDir()
	group = PlaceholderGroupDir(registry, ws)
	if err := os.Mkdir(group, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws, filepath.Join(group, "dir")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lock", "decide"} {
		if err := os.WriteFile(filepath.Join(group, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return registry, group
}

// lockDecisions takes group's decide lock exclusively, as a run deciding
// there does; closing the file lets it go.
func lockDecisions(t *testing.T, group string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(group, "decide"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGuardianRemovesUnderTheDecideLock: the guardian of a killed helper
// removes the run's placeholders holding the group's decide lock, as every
// removal does. A decision reads a placeholder's record and its directory
// under that lock, shared (mountns.peekRegistered), and an rmdir changes
// the directory's ctime before its name goes: a removal it does not wait
// for has the decision take the placeholder for the user's directory.
func TestGuardianRemovesUnderTheDecideLock(t *testing.T) {
	r := initRecipe(t)
	ws := t.TempDir()
	_, group := placeholderGroup(t, ws)
	ph := filepath.Join(ws, ".codex")
	r.Claims = []RecipeClaim{{Parent: ws, Dir: group, Placeholders: []string{ph}}}
	ready := filepath.Join(t.TempDir(), "ready")
	run := startRecipe(t, r, []string{"/bin/sh", "-c", `: > "$1"; exec sleep 600`, "sh", ready}, runOpts{})
	run.waitFile(ready, "the program never started")
	if _, err := os.Lstat(ph); err != nil {
		t.Fatalf("the run made no placeholder: %v", err)
	}
	decide := lockDecisions(t, group)
	_ = run.cmd.Process.Kill()
	_ = run.cmd.Wait()
	gone := func() bool { _, err := os.Lstat(ph); return errors.Is(err, os.ErrNotExist) }
	// The guardian kills the tree, waits for the init, then for the lock.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if gone() {
			t.Fatal("the guardian removed the placeholder while a decision held the decide lock")
		}
	}
	decide.Close()
	for deadline := time.Now().Add(30 * time.Second); !gone(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the guardian left the placeholder once the decide lock was free")
		}
	}
}

// TestGuardianRemovesInTheDirectoryClaimed: the guardian of a killed helper
// removes a placeholder by its name in the directory the claim took, never
// by its path. Here the workspace is moved while the run lives and its
// path made a link to another directory that has an empty directory of
// the placeholder's name: the guardian removes the run's placeholder where
// it is now, and leaves the other directory alone. Before, it looked the
// path up twice (to compare, then to remove), following links on the way:
// a program of another run that can rename an ancestor could lead the
// second lookup to another run's placeholder, in use.
func TestGuardianRemovesInTheDirectoryClaimed(t *testing.T) {
	r := initRecipe(t)
	base := t.TempDir()
	ws, moved, other := filepath.Join(base, "ws"), filepath.Join(base, "ws-moved"), filepath.Join(base, "other")
	for _, d := range []string{ws, filepath.Join(other, ".codex")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, group := placeholderGroup(t, ws)
	r.Claims = []RecipeClaim{{Parent: ws, Dir: group, Placeholders: []string{filepath.Join(ws, ".codex")}}}
	ready := filepath.Join(t.TempDir(), "ready")
	run := startRecipe(t, r, []string{"/bin/sh", "-c", `: > "$1"; exec sleep 600`, "sh", ready}, runOpts{})
	run.waitFile(ready, "the program never started")
	if err := os.Rename(ws, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, ws); err != nil {
		t.Fatal(err)
	}
	_ = run.cmd.Process.Kill()
	_ = run.cmd.Wait()
	ph := filepath.Join(moved, ".codex")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Lstat(ph); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guardian left the run's placeholder %s", ph)
		}
	}
	if _, err := os.Lstat(filepath.Join(other, ".codex")); err != nil {
		t.Errorf("the directory the workspace's path now leads to lost its .codex: %v", err)
	}
}

// waitFile waits for the file at path, which the child makes; should it
// not come, the child is killed and the test fails, saying why.
func (run *recipeRun) waitFile(path, why string) {
	t := run.t
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			_ = run.cmd.Process.Kill()
			end := run.wait()
			t.Fatalf("%s (exit %d, stderr %q)", why, end.Code, end.Stderr)
		}
	}
}
