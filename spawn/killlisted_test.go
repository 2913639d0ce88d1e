package spawn

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillCgroupNeverSignalsPidZero: a cgroup.procs file lists a process
// of a PID namespace the reader cannot see as 0, and kill(0) would reach
// the killer's own process group: the caller of the helper among them. A
// child in a process group of its own ends a "cgroup" whose procs file
// lists 0 and the pid of a sleep it started: the sleep dies, the child
// lives.
func TestKillCgroupNeverSignalsPidZero(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillCgroupNeverSignalsPidZeroChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SE_KILL_ZERO_DIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child that ended a cgroup listing pid 0: %v (a kill(0) ends the killer's own group)\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestKillCgroupNeverSignalsPidZeroChild") {
		t.Fatalf("the child did not pass:\n%s", out)
	}
}

// TestKillCgroupNeverSignalsPidZeroChild is TestKillCgroupNeverSignalsPidZero's child.
func TestKillCgroupNeverSignalsPidZeroChild(t *testing.T) {
	dir := os.Getenv("SE_KILL_ZERO_DIR")
	if dir == "" {
		t.Skip("run by TestKillCgroupNeverSignalsPidZero")
	}
	sleep := exec.Command("/bin/sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleep.Process.Kill() }()
	procs := filepath.Join(dir, "cgroup.procs")
	// The last number has no newline after it: the end of the file ends it.
	if err := os.WriteFile(procs, []byte(fmt.Sprintf("0\n%d\n0", sleep.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := sleep.Wait()
		// The sleep has left the "cgroup": KillCgroup's next round sees
		// only what it cannot name, and ends.
		_ = os.WriteFile(procs, []byte("0\n"), 0o600)
		done <- err
	}()
	KillCgroup("", []string{procs})
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("the listed sleep did not die of SIGKILL: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the listed sleep is still alive")
	}
}
