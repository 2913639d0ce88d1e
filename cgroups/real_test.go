package cgroups

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
	"sandbox-executable/procfs"
	"sandbox-executable/spawn"
)

// These tests touch real cgroups, only below the default parents, and move
// only the processes they start. They need root. Making a run's group,
// its limits and its end are the spawn stage runner's (integration tests);
// here: what Go still does with cgroups (detecting the host, readying it,
// reading a run's figures, sweeping what dead runs left).

func realHost(t testing.TB) *Host {
	t.Helper()
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root: creates cgroups")
	}
	h, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode == Unavailable {
		testcap.Skipf(t, testcap.Cgroups, "no cgroup filesystem mounted")
	}
	return h
}

func TestDetectThisHost(t *testing.T) {
	h, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mode %s, v2 %+v", h.Mode, h.V2)
	for _, v := range h.V1 {
		t.Logf("v1 %+v", v)
	}
	if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.procs"); err == nil && h.Mode != Hybrid && h.Mode != Unified {
		t.Errorf("cgroup2 at /sys/fs/cgroup/unified but mode %s", h.Mode)
	}
	if h.V2 != nil {
		if _, err := os.Stat(h.V2.Mount + "/cgroup.procs"); err != nil {
			t.Errorf("v2 mount %s: %v", h.V2.Mount, err)
		}
		if d, err := h.V2.Dir(h.V2.Own); err != nil {
			t.Error(err)
		} else if b, err := os.ReadFile(d + "/cgroup.procs"); err != nil || !slices.Contains(strings.Fields(string(b)), strconv.Itoa(os.Getpid())) {
			t.Errorf("this process is not in its own v2 cgroup %s (%v)", d, err)
		}
	}
	for _, v := range h.V1 {
		d, err := v.Dir(v.Own)
		if err != nil {
			t.Error(err)
			continue
		}
		b, err := os.ReadFile(d + "/cgroup.procs")
		if err != nil || !slices.Contains(strings.Fields(string(b)), strconv.Itoa(os.Getpid())) {
			t.Errorf("this process is not in its own %v cgroup %s (%v)", v.Controllers, d, err)
		}
	}
}

// TestReadyThenAttach: Ready leaves the parents a run's group is made in,
// enabling what the limits need; a group made there under a run's name
// (as the runner makes it) is found again by Attach, whose figures read.
func TestReadyThenAttach(t *testing.T) {
	h := realHost(t)
	lim := Limits{MemoryBytes: 64 << 20, Pids: 32}
	dirs, _, err := Ready(h, lim, Options{MoveSelf: true})
	var ue *UnavailableError
	if asUnavailable(err, &ue) {
		t.Skipf("this host cannot give the group: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	name := NamePrefix + strconv.Itoa(os.Getpid()) + "-1-2-" + strconv.FormatUint(rand.Uint64()&(1<<48-1), 16)
	for _, d := range dirs {
		if err := os.Mkdir(d.Parent+"/"+name, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(d.Parent + "/" + name) })
	}
	g, err := Attach(h, lim, Options{MoveSelf: true}, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Stats(); err != nil {
		t.Errorf("stats of %s: %v", g.Path(), err)
	}
	if !strings.HasSuffix(g.Path(), "/"+name) {
		t.Errorf("path %s", g.Path())
	}
}

// TestCleanupStale: a group named after a supervisor that is gone (a dead
// pid, or a pid reused by another process) is ended and removed; one of a
// live supervisor, or of another pid namespace, is left alone.
func TestCleanupStale(t *testing.T) {
	h := realHost(t)
	if h.V2 == nil {
		t.Skip("no cgroup2 hierarchy")
	}
	lim := Limits{}
	dirs, _, err := Ready(h, lim, Options{MoveSelf: true})
	if err != nil || len(dirs) == 0 {
		t.Skipf("this host cannot give a group: %v", err)
	}
	parent := dirs[0].Parent
	rnd := func() string { return strconv.FormatUint(rand.Uint64()&(1<<48-1), 16) }
	start, ns := selfStartAndNS(t)
	dead := deadPid(t)
	names := map[string]bool{ // name: stale
		NamePrefix + strconv.Itoa(dead) + "-" + rnd():                                                                                 true,
		NamePrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(start+1, 10) + "-" + rnd():                                  true,
		NamePrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(start, 10) + "-" + strconv.FormatUint(ns, 10) + "-" + rnd(): false,
		NamePrefix + strconv.Itoa(dead) + "-12345-1-" + rnd():                                                                         false,
	}
	for n := range names {
		if err := os.Mkdir(parent+"/"+n, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(parent + "/" + n) })
	}
	// A process in the stale group: the sweep's kill must end it.
	var staleName string
	for n, stale := range names {
		if stale && strings.HasPrefix(n, NamePrefix+strconv.Itoa(dead)+"-") && strings.Count(n, "-") == strings.Count(NamePrefix, "-")+1 {
			staleName = n
		}
	}
	cmd := exec.Command("/bin/sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := os.WriteFile(parent+"/"+staleName+"/cgroup.procs", []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	var killed []string
	// The runner's own kill (cgroup.kill where the kernel has it, 5.14+,
	// and SIGKILL to each pid listed), recording what it was given.
	kill := func(killFile string, procs []string) bool {
		killed = append(killed, killFile)
		return spawn.KillCgroup(killFile, procs)
	}
	removed, err := CleanupStale(h, Sweeper{Stale: spawn.CgroupStale, Kill: kill})
	if err != nil {
		t.Logf("CleanupStale error (may concern groups of others): %v", err)
	}
	for n, stale := range names {
		_, serr := os.Stat(parent + "/" + n)
		if gone := slices.Contains(removed, parent+"/"+n); gone != stale || (serr == nil) == stale {
			t.Errorf("%s (stale %v): removed %v, still there %v", n, stale, gone, serr == nil)
		}
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the process in the stale group was not killed: %v", err)
	}
}

// selfStartAndNS are this process's start time and pid namespace, as the
// runner records them in a group's name.
func selfStartAndNS(t *testing.T) (start, ns uint64) {
	st, err := procfs.ReadStat(os.Getpid())
	if err != nil || st.StartTime == 0 {
		t.Fatalf("no start time for this process: %v", err)
	}
	var s unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &s); err != nil {
		t.Fatal(err)
	}
	return st.StartTime, s.Ino
}

func BenchmarkDetect(b *testing.B) {
	for b.Loop() {
		if _, err := Detect(); err != nil {
			b.Fatal(err)
		}
	}
}

func asUnavailable(err error, ue **UnavailableError) bool {
	return errors.As(err, ue)
}
