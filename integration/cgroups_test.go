package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandbox-executable/internal/testcap"
)

// needCgroups skips tests that need the helper to make cgroups.
func needCgroups(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root: the helper makes cgroups")
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		testcap.Skipf(t, testcap.Cgroups, "no cgroup filesystem")
	}
}

func limits(memMB, pids, cpu, timeout int) string {
	return fmt.Sprintf(`{"max_memory_mb":%d,"max_pids":%d,"max_disk_mb":0,"cpu_time_secs":%d,"timeout_secs":%d}`, memMB, pids, cpu, timeout)
}

// leakedCgroups lists cgroups that helpers run by this test process left
// behind (a group's name carries its supervisor's pid).
func leakedCgroups(t *testing.T) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rest, ok := strings.CutPrefix(d.Name(), "sandbox-executable-")
		if !ok {
			return nil
		}
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); err == nil {
			if _, ours := started.Load(n); ours {
				out = append(out, p)
			}
		}
		return nil
	})
	return out
}

// TestForkBombHitsPidsLimit: a fork bomb under max_pids 64 gets no more than
// 64 processes, and the helper returns.
func TestForkBombHitsPidsLimit(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	r := w.sandbox(t, roPolicy, []string{"--resource-limits", limits(0, 64, 0, 60)}, probe, "forkmax")
	n, err := strconv.Atoi(strings.TrimSpace(r.stdout))
	if err != nil || r.code != 0 {
		t.Fatalf("%v", r)
	}
	// The probe itself is one of the 64.
	if n+1 > 64 || n < 32 {
		t.Errorf("forked %d children under max_pids 64", n)
	}
}

// TestCgroupWithoutClone3: under a container's seccomp filter that answers
// ENOSYS to clone3, the program still starts in the run's cgroup (it joins
// through cgroup.procs) and the pids limit still holds.
func TestCgroupWithoutClone3(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	// The launcher's filter works: clone3 gets ENOSYS under it, not without.
	if out, _ := exec.Command(probe, "noclone3", probe, "clone3").Output(); string(out) != "ENOSYS\n" {
		t.Fatalf("under the launcher clone3 gave %q, so this test shows nothing", out)
	}
	if out, _ := exec.Command(probe, "clone3").Output(); string(out) != "ok\n" {
		t.Skipf("clone3 does not work here even without the launcher: %q", out)
	}
	r := run(t, runOpts{env: w.env(), dir: w.root, via: []string{probe, "noclone3"}},
		"--sandbox-policy", roPolicy, "--resource-limits", limits(0, 16, 0, 60), "--", "/bin/sh", "-c",
		"cat /proc/self/cgroup; "+probe+" forkmax")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	// In a cgroup namespace rooted at the run's cgroup every hierarchy
	// shows "/"; without one, the run's group is named. (The pids limit
	// below shows the group is the run's.)
	inNS := true
	for _, l := range lines[:len(lines)-1] {
		inNS = inNS && strings.HasSuffix(l, ":/")
	}
	if !inNS && !strings.Contains(r.stdout, "/sandbox-executable-") {
		t.Errorf("the program is not in the run's cgroup: %v", r)
	}
	n, err := strconv.Atoi(lines[len(lines)-1])
	if err != nil || n < 1 || n > 16 {
		t.Errorf("forkmax under max_pids 16: %q (%v)", lines[len(lines)-1], r)
	}
}

// TestMemoryHogKilled: 2 GB under max_memory_mb 256 is killed (137).
func TestMemoryHogKilled(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	// The report tells the group's OOM kill from the host's.
	r, rep := reportOf(t, w, []string{"--sandbox-policy", roPolicy, "--resource-limits", limits(256, 0, 0, 60)}, probe, "hog", "2048")
	if r.code != 137 || strings.Contains(r.stdout, "survived") || rep["ending"] != "oom" {
		t.Errorf("%v, ending %v; want death by SIGKILL from the cgroup's OOM kill", r, rep["ending"])
	}
}

// TestMemoryLimitIsForTheTree: 8 processes of 64 MB each (512 MB) under
// 256 MB end the whole run as out of memory (137), on every cgroup layout:
// v2 kills the group (memory.oom.group); a v1 memory controller kills only
// its pick, and the parent that reports the deaths would run on, so the
// helper ends the tree at the first OOM kill.
func TestMemoryLimitIsForTheTree(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	r, rep := reportOf(t, w, []string{"--sandbox-policy", roPolicy, "--resource-limits", limits(256, 0, 0, 60)}, probe, "hogs", "8", "64")
	if r.code != 137 || rep["ending"] != "oom" || strings.Contains(r.stdout, "killed") {
		t.Errorf("%v, ending %v: want the whole tree ended as oom, exit 137, before the parent could report", r, rep["ending"])
	}
	if n, _ := rep["oom_kills"].(float64); n < 1 {
		t.Errorf("oom_kills %v: want at least 1", rep["oom_kills"])
	}
}

// TestCPUBudgetForTheTree: 4 processes spinning, cpu_time_secs 2: the run
// ends on the tree's CPU budget (exit 152), long before its timeout.
func TestCPUBudgetForTheTree(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	// The report says which limit ended it: exit 152 is also what one
	// spinner's own RLIMIT_CPU gives it.
	r, rep := reportOf(t, w, []string{"--sandbox-policy", roPolicy, "--resource-limits", limits(0, 0, 2, 120)}, probe, "spin", "4")
	if r.code != 152 || rep["ending"] != "cpu_budget" {
		t.Errorf("%v, ending %v; want 152 from the tree's CPU budget", r, rep["ending"])
	}
}

// TestNothingOutlivesARunAndNoCgroupLeaks: a daemon left behind is killed
// and every cgroup is removed.
func TestNothingOutlivesARunAndNoCgroupLeaks(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	id := tag(t)
	r := w.sandbox(t, roPolicy, nil, "/bin/sh", "-c", `"$0" daemon 1000 "$1"`, probe, id)
	if r.code != 0 || r.stdout != "ok\n" {
		t.Fatalf("the daemon did not start: %v", r)
	}
	if left := processesTagged(id); len(left) > 0 {
		t.Errorf("daemon left running: %v", left)
	}
	if leaks := leakedCgroups(t); len(leaks) > 0 {
		t.Errorf("cgroups left behind: %v", leaks)
	}
}

// TestSupervisorKilledNothingRunsOn: kill -9 of the helper leaves no process
// of the tree running after a short time, and no cgroup.
func TestSupervisorKilledNothingRunsOn(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	id := tag(t)
	cmd := exec.Command(binary, "--sandbox-policy-cwd", w.root, "--sandbox-policy", roPolicy, "--",
		"/bin/sh", "-c", `"$0" daemon 1000 "$1"; exec "$0" sleep 1000 "$1"`, probe, id)
	cmd.Env = append(os.Environ(), "HOME="+w.home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started.Store(cmd.Process.Pid, true)
	deadline := time.Now().Add(10 * time.Second)
	for len(processesTagged(id)) < 2 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the tree never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for len(processesTagged(id)) > 0 || len(leakedCgroups(t)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after kill -9 of the helper: processes %v, cgroups %v", processesTagged(id), leakedCgroups(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHundredInParallel: 100 sandboxes at once (30 with -short, in the VM
// guests) all finish, every limit holds, and no cgroup is left.
func TestHundredInParallel(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	n := 100
	if testing.Short() {
		n = 30 // the VM guests: emulated, and slower by far
	}
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A hundred helpers at once on a loaded 2-CPU guest under
			// emulation take minutes: the bounds are for a hang.
			r := run(t, runOpts{env: w.env(), dir: w.root, timeout: 10 * time.Minute}, "--sandbox-policy-cwd", w.root, "--sandbox-policy", roPolicy,
				"--resource-limits", limits(64, 16, 0, 600), "--", probe, "forkmax")
			n, err := strconv.Atoi(strings.TrimSpace(r.stdout))
			if err != nil || r.code != 0 || n+1 > 16 || n < 8 {
				errs <- r.String()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if leaks := leakedCgroups(t); len(leaks) > 0 {
		t.Errorf("cgroups left behind: %v", leaks)
	}
}

// TestCgroupParent: --cgroup-parent puts the run's cgroup under the parent
// given (made if missing), and nothing is left there afterwards.
func TestCgroupParent(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	parent := "/se-test-parent-" + tag(t)[7:15]
	_, rep := reportOf(t, w, []string{"--sandbox-policy", roPolicy, "--cgroup-parent", parent}, "/bin/true")
	cg, _ := rep["cgroup"].(map[string]any)
	if cg == nil || !strings.Contains(cg["path"].(string), parent+"/sandbox-executable-") {
		t.Fatalf("cgroup %v, want one under %s", rep["cgroup"], parent)
	}
	if leaks := leakedCgroups(t); len(leaks) > 0 {
		t.Errorf("cgroups left behind: %v", leaks)
	}
	for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids"} {
		if _, err := os.Stat(mount + parent); err == nil {
			t.Errorf("the parent %s%s the helper made was left behind", mount, parent)
		}
	}
}
