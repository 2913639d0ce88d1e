package spawn

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// openDir opens dir as the run's temp dir lock is open (closed after the
// test).
func openDir(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
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
	if err := os.WriteFile(filepath.Join(tmp, "left-by-the-program"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := StartGuardian(GuardianSpec{Locks: []GuardedLock{{FD: int(lock.Fd()), Placeholders: []GuardedDir{ph}}},
		TempDirs: []TempDir{{Path: tmp, Record: tmpRec, FD: openDir(t, tmp)}}, SweepRequest: request})
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
	if _, err := os.Stat(filepath.Join(tmp, "left-by-the-program")); err != nil {
		t.Fatalf("the temp dir emptied while the child runs: %v", err)
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
// claims, a directory that is no longer the one recorded, a temp dir whose
// path now names another directory (what was in the run's own, found
// through its descriptor, goes all the same).
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
	tmpFD := openDir(t, tmp)
	// Renamed away, and another directory, with a file of its own, made
	// in its place.
	moved := filepath.Join(dir, "tmp-moved")
	if err := os.Rename(tmp, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "not-the-runs"), 0o700); err != nil {
		t.Fatal(err)
	}
	tmpRec := filepath.Join(dir, "tmp-record")
	if err := os.WriteFile(tmpRec, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := StartGuardian(GuardianSpec{Locks: []GuardedLock{
		{FD: int(claimed.Fd()), Placeholders: []GuardedDir{inUse}},
		{FD: int(free.Fd()), Placeholders: []GuardedDir{replaced}},
	}, TempDirs: []TempDir{{Path: tmp, Record: tmpRec, FD: tmpFD}}})
	if err != nil {
		t.Fatal(err)
	}
	supervisorDies(g, claimed, free)
	if !waitGone(g.Pid) {
		t.Fatal("the guardian did not finish")
	}
	for _, p := range []string{inUse.Path, inUse.Record, replaced.Path, filepath.Join(tmp, "not-the-runs"), tmpRec, moved} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(moved, "left-by-the-program")); err == nil {
		t.Error("what the program left in the run's temp dir (renamed since) is still there")
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

// TestRemoveTempDir: a private temp dir goes with whatever a program left
// in it, a read-only module cache's 0555 directories included, without
// following a link out of it (the link goes, its target stays) or entering
// a mount in it; the directory itself only while its path still names it.
func TestRemoveTempDir(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(outside, "sub", "keep")
	if err := os.WriteFile(keep, []byte("the user's"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(base, "tmp")
	deep := tmp
	for i := 0; i < 40; i++ {
		deep = filepath.Join(deep, "d")
	}
	for _, d := range []string{deep, filepath.Join(tmp, "mod", "pkg@v1", "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(deep, "f"), filepath.Join(tmp, "mod", "pkg@v1", "sub", "x.go"), filepath.Join(tmp, "mod", "pkg@v1", "go.mod")} {
		if err := os.WriteFile(f, []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Join(tmp, "mod", "pkg@v1", "sub"), filepath.Join(tmp, "mod", "pkg@v1"), filepath.Join(tmp, "mod")} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"link-dir": outside, "link-sub": filepath.Join(outside, "sub"), "link-file": keep} {
		if err := os.Symlink(target, filepath.Join(tmp, name)); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		// A mount inside: left alone, and so the directory stays. On a
		// thread of its own in a mount namespace of its own (which ends
		// with the thread: it is never unlocked).
		mnt := filepath.Join(tmp, "mnt")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		fd := openDir(t, tmp)
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread()
			if unix.Unshare(unix.CLONE_NEWNS|unix.CLONE_FS) != nil || unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") != nil ||
				unix.Mount(outside, mnt, "", unix.MS_BIND, "") != nil {
				t.Error("no mount namespace of the test's own")
				return
			}
			err := RemoveTempDir(tmp, fd, "")
			if _, serr := os.Stat(filepath.Join(mnt, "sub", "keep")); err == nil || serr != nil {
				t.Errorf("a mount in the temp dir: removal %v, the mounted file %v", err, serr)
			}
		}()
		<-done
		if err := os.Remove(mnt); err != nil {
			t.Fatal(err)
		}
	}
	rec := filepath.Join(base, "record")
	if err := os.Symlink(tmp, rec); err != nil {
		t.Fatal(err)
	}
	if err := RemoveTempDir(tmp, openDir(t, tmp), rec); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tmp, rec} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "the user's" {
		t.Errorf("a file a link in the temp dir pointed at: %q %v", b, err)
	}
}
