package spawn

import (
	"os"
	"os/exec"
	"path/filepath"
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
	g, err := StartGuardian(kill, []string{procs}, dirs)
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
	g, err := StartGuardian(kill, []string{procs}, dirs)
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

// TestGuardianIsNotOurChild: a subreaper waiting for ECHILD must not wait
// for the guardian.
func TestGuardianIsNotOurChild(t *testing.T) {
	kill, procs, dirs, _ := guardianFixture(t)
	g, err := StartGuardian(kill, []string{procs}, dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Release(); waitGone(g.Pid) }()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(g.Pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	if ppid, _ := parentField(string(b)); ppid == os.Getpid() {
		t.Errorf("the guardian is our child")
	}
}

func parentField(stat string) (int, error) {
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+2:])
	return strconv.Atoi(f[1])
}

// TestGuardianLeavesTheProcessGroup: a group kill aimed at the supervisor
// must not reach it.
func TestGuardianLeavesTheProcessGroup(t *testing.T) {
	kill, procs, dirs, _ := guardianFixture(t)
	g, err := StartGuardian(kill, []string{procs}, dirs)
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

// TestGuardianHoldsOnlyItsPipe: the guardian never holds a copy of the
// caller's descriptors (a reader of the caller's stdout would wait for it).
func TestGuardianHoldsOnlyItsPipe(t *testing.T) {
	kill, procs, dirs, _ := guardianFixture(t)
	g, err := StartGuardian(kill, []string{procs}, dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Release(); waitGone(g.Pid) }()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(g.Pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("the guardian holds %d descriptors, want only its pipe", len(ents))
	}
}
