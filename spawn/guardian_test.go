package spawn

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The guardian is given plain files in place of a cgroup's: a "kill file",
// a "procs" file listing a sleeping process, and directories to remove.
func guardianFixture(t *testing.T) (kill, procs string, dirs []string, sleeper *exec.Cmd) {
	t.Helper()
	base := t.TempDir()
	kill = filepath.Join(base, "cgroup.kill")
	procs = filepath.Join(base, "cgroup.procs")
	if err := os.WriteFile(kill, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sleeper = exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	if err := os.WriteFile(procs, []byte(strconv.Itoa(sleeper.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs = []string{filepath.Join(base, "child"), filepath.Join(base, "parent")}
	for _, d := range []string{filepath.Join(base, "parent"), filepath.Join(base, "child")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return kill, procs, dirs, sleeper
}

// waitGone waits until pid has exited (the guardian is not our child: its
// reaper is init's side, so "exited" means gone or a zombie).
func waitGone(pid int) bool {
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestGuardianActsWhenTheSupervisorVanishes(t *testing.T) {
	kill, procs, dirs, sleeper := guardianFixture(t)
	g, err := StartGuardian(GuardianSpec{KillFile: kill, Procs: []string{procs}, CgroupDirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	// The supervisor "dies": its write end closes without a 'D'.
	unix.Close(g.w)
	g.w = -1
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the guardian did not kill the listed process")
	}
	// The process is gone: empty the list, as the kernel would.
	if err := os.WriteFile(procs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !waitGone(g.Pid) {
		t.Fatal("the guardian did not finish")
	}
	if b, _ := os.ReadFile(kill); string(b) != "1" {
		t.Errorf("kill file holds %q, want 1", b)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s not removed", d)
		}
	}
}

func TestGuardianReleasedDoesNothing(t *testing.T) {
	kill, procs, dirs, sleeper := guardianFixture(t)
	g, err := StartGuardian(GuardianSpec{KillFile: kill, Procs: []string{procs}, CgroupDirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	g.Release()
	if !waitGone(g.Pid) {
		t.Fatal("a released guardian did not exit")
	}
	if err := sleeper.Process.Signal(unix.Signal(0)); err != nil {
		t.Errorf("the listed process was touched: %v", err)
	}
	if b, _ := os.ReadFile(kill); len(b) != 0 {
		t.Errorf("kill file written: %q", b)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed", d)
		}
	}
}

// TestGuardianIsNotWaitedFor: a subreaper waiting for ECHILD the way the
// supervisor does (wait4 without __WALL) must not wait for the guardian,
// and its leaving the caller's process group must hold.
func TestGuardianIsNotWaitedFor(t *testing.T) {
	kill, procs, dirs, _ := guardianFixture(t)
	g, err := StartGuardian(GuardianSpec{KillFile: kill, Procs: []string{procs}, CgroupDirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Release(); waitGone(g.Pid) }()
	var st unix.WaitStatus
	if _, err := unix.Wait4(g.Pid, &st, unix.WNOHANG, nil); err != unix.ECHILD {
		t.Errorf("wait4 without __WALL waits for the guardian: %v", err)
	}
	// It does leave our process group (setsid), once it runs.
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(g.Pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if sid, _ := sessionField(string(b)); sid == g.Pid {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Errorf("the guardian did not leave our session")
}

func sessionField(stat string) (int, error) {
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+2:])
	return strconv.Atoi(f[3])
}

// TestGuardianLeavesTheProcessGroup: a group kill aimed at the supervisor
// must not reach it.
func TestGuardianLeavesTheProcessGroup(t *testing.T) {
	kill, procs, dirs, _ := guardianFixture(t)
	g, err := StartGuardian(GuardianSpec{KillFile: kill, Procs: []string{procs}, CgroupDirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Release(); waitGone(g.Pid) }()
	for i := 0; i < 100; i++ {
		if sid, _ := unix.Getsid(g.Pid); sid == g.Pid {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("guardian still in the caller's session")
}

// TestGuardianHoldsOnlyItsPipeAndLocks: the guardian never holds a copy of
// the caller's other descriptors (a reader of the caller's stdout would
// wait for it) once it says it is ready, which Release waits for.
func TestGuardianHoldsOnlyItsPipeAndLocks(t *testing.T) {
	kill, procs, dirs, _ := guardianFixture(t)
	lock := lockedFile(t)
	tmpLock := lockedFile(t)
	g, err := StartGuardian(GuardianSpec{KillFile: kill, Procs: []string{procs}, CgroupDirs: dirs,
		Locks: []GuardedLock{{FD: int(lock.Fd())}}, KeepFDs: []int{int(tmpLock.Fd())}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Release(); waitGone(g.Pid) }()
	if !g.waitReady() {
		t.Fatal("the guardian never said it was ready")
	}
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(g.Pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/" + strconv.Itoa(g.Pid) + "/fd/" + e.Name())
		held = append(held, l)
	}
	if len(held) != 3 || !slices.Contains(held, lock.Name()) || !slices.Contains(held, tmpLock.Name()) {
		t.Errorf("the guardian holds %v, want its pipe and the two locks", held)
	}
}

// lockedFile is an open file with a shared flock on it, as a run's claim.
func lockedFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "lock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	return f
}

// placeholder makes an empty directory and its record, as a run does.
func placeholder(t *testing.T, dir, name string) GuardedDir {
	t.Helper()
	d := GuardedDir{Path: filepath.Join(dir, name), Record: filepath.Join(dir, "record-"+name)}
	if err := os.Mkdir(d.Path, 0o700); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(d.Path, &st); err != nil {
		t.Fatal(err)
	}
	d.Dev, d.Ino, d.Ctime = st.Dev, st.Ino, st.Ctim
	if err := os.Symlink("record", d.Record); err != nil {
		t.Fatal(err)
	}
	return d
}

// supervisorDies closes the guardian's pipe without a 'D', and the run's
// own copies of its locks, as the supervisor's death does.
func supervisorDies(g *Guardian, locks ...*os.File) {
	unix.Close(g.w)
	g.w = -1
	for _, l := range locks {
		l.Close()
	}
}

// inPoll waits until pid sleeps in ppoll(2) (the guardian waiting for the
// supervisor's child), or reports that it never does.
func inPoll(pid int) bool {
	for i := 0; i < 1000; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
		if err != nil {
			return false
		}
		if strings.HasPrefix(string(b), strconv.Itoa(unix.SYS_PPOLL)+" ") {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// TestGuardianCleansUpOnceTheChildIsGone: after the supervisor died, the
// guardian holds the run's claim, waits for the supervisor's child (the
// program's init) to be gone, and only then removes the placeholders of
// the lock it can take exclusively and the empty temp dir, then asks for a
// sweep.
func TestGuardianCleansUpOnceTheChildIsGone(t *testing.T) {
	dir := t.TempDir()
	lock := lockedFile(t)
	ph := placeholder(t, dir, ".git")
	tmp := filepath.Join(dir, "tmp")
	tmpRec := filepath.Join(dir, "tmp-record")
	request := filepath.Join(dir, "sweep-request")
	if err := os.WriteFile(tmpRec, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	g, err := StartGuardian(GuardianSpec{Locks: []GuardedLock{{FD: int(lock.Fd()), Placeholders: []GuardedDir{ph}}},
		EmptyDirs: []EmptyDir{{Path: tmp, Record: tmpRec}}, SweepRequest: request})
	if err != nil {
		t.Fatal(err)
	}
	g.setChild(child.Process.Pid) // what the clone of the child writes
	name := lock.Name()
	supervisorDies(g, lock)
	if !inPoll(g.Pid) {
		t.Fatal("the guardian does not wait for the child")
	}
	if _, err := os.Stat(ph.Path); err != nil {
		t.Fatalf("a placeholder removed while the child runs: %v", err)
	}
	// The claim is still held, by the guardian.
	other, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		t.Fatal("the run's claim ended with the supervisor")
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	if !waitGone(g.Pid) {
		t.Fatal("the guardian did not finish")
	}
	for _, p := range []string{ph.Path, ph.Record, tmp, tmpRec} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s left", p)
		}
	}
	if _, err := os.Lstat(request); err != nil {
		t.Errorf("no sweep asked for: %v", err)
	}
}

// TestGuardianLeavesWhatIsNotItsToRemove: placeholders another run still
// claims, a directory that is no longer the one recorded, a temp dir with
// something in it.
func TestGuardianLeavesWhatIsNotItsToRemove(t *testing.T) {
	dir := t.TempDir()
	claimed, free := lockedFile(t), lockedFile(t)
	other, err := os.Open(claimed.Name()) // another run's claim on the same group
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	inUse := placeholder(t, dir, ".codex")
	replaced := placeholder(t, dir, ".vtcode")
	if err := os.Remove(replaced.Path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(replaced.Path, 0o700); err != nil { // the user's own now
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(filepath.Join(tmp, "left-by-the-program"), 0o700); err != nil {
		t.Fatal(err)
	}
	tmpRec := filepath.Join(dir, "tmp-record")
	if err := os.WriteFile(tmpRec, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := StartGuardian(GuardianSpec{Locks: []GuardedLock{
		{FD: int(claimed.Fd()), Placeholders: []GuardedDir{inUse}},
		{FD: int(free.Fd()), Placeholders: []GuardedDir{replaced}},
	}, EmptyDirs: []EmptyDir{{Path: tmp, Record: tmpRec}}})
	if err != nil {
		t.Fatal(err)
	}
	supervisorDies(g, claimed, free)
	if !waitGone(g.Pid) {
		t.Fatal("the guardian did not finish")
	}
	for _, p := range []string{inUse.Path, inUse.Record, replaced.Path, tmp, tmpRec} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed", p)
		}
	}
	if _, err := os.Lstat(replaced.Record); err == nil {
		t.Errorf("the record of a directory that is no longer ours was kept")
	}
}

// TestGuardianLearnsTheChildFromTheClone: the kernel writes the pid of the
// supervisor's child into the guardian's memory as it clones it, for a
// plain child and for an init.
func TestGuardianLearnsTheChildFromTheClone(t *testing.T) {
	for _, init := range []bool{false, true} {
		g, err := StartGuardian(GuardianSpec{})
		if err != nil {
			t.Fatal(err)
		}
		req := &Request{Paths: []string{"/bin/true"}, Argv: []string{"true"}, Guardian: g}
		if init {
			req, _ = initRequest(t, "true")
			req.Guardian = g
		}
		p, err := Start(withNone(req))
		if err != nil {
			t.Fatal(err)
		}
		var st unix.WaitStatus
		_, _ = unix.Wait4(p.Pid, &st, 0, nil)
		if p.PidFD >= 0 {
			unix.Close(p.PidFD)
		}
		if got := g.child(); got != p.Pid {
			t.Errorf("init %v: the guardian knows child %d, want %d", init, got, p.Pid)
		}
		g.Release()
		waitGone(g.Pid)
	}
}

// withNone sets the descriptors a test leaves unset to none.
func withNone(req *Request) *Request {
	for _, fd := range []*int{&req.CgroupFD, &req.RulesetFD, &req.NotifySock} {
		if *fd == 0 {
			*fd = -1
		}
	}
	return req
}
