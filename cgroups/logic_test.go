package cgroups

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sandbox-executable/remedy"
)

func TestCPUQuota(t *testing.T) {
	for _, c := range []struct {
		cores float64
		want  string
	}{
		{1, "100000 100000"},
		{0.5, "50000 100000"},
		{2.25, "225000 100000"},
		{0.001, "1000 100000"}, // the kernel's minimum
		{0.333333, "33334 100000"},
	} {
		if got := cpuMax(c.cores); got != c.want {
			t.Errorf("cpuMax(%v) = %q, want %q", c.cores, got, c.want)
		}
	}
	if q := cpuQuotaUs(1e30, cpuPeriodUs); q != math.MaxInt64/1000 {
		t.Errorf("huge quota = %d", q)
	}
}

func TestKeyValue(t *testing.T) {
	text := "usage_usec 1200\nuser_usec 1000\nsystem_usec 200\nnr_periods 0\n"
	if v, ok := keyValue(text, "user_usec"); !ok || v != 1000 {
		t.Fatalf("user_usec = %d, %v", v, ok)
	}
	if _, ok := keyValue(text, "usage"); ok {
		t.Fatal("a key prefix must not match")
	}
	if v, ok := keyValue("oom_kill_disable 0\nunder_oom 0\noom_kill 3", "oom_kill"); !ok || v != 3 {
		t.Fatalf("oom_kill = %d, %v", v, ok)
	}
	if v, ok := keyValue("max 7\n", "max"); !ok || v != 7 {
		t.Fatalf("max = %d", v)
	}
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	for i := 0; i < 10; i++ {
		cmd := exec.Command("/bin/true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		p := cmd.Process.Pid
		if _, err := os.Stat("/proc/" + strconv.Itoa(p)); errors.Is(err, os.ErrNotExist) {
			return p
		}
	}
	t.Fatal("no dead pid found")
	return 0
}

func TestRoute(t *testing.T) {
	hy := host(hybridMountinfo, hybridCgroup)
	hy.V2.Controllers = []string{"hugetlb"}
	p, err := route(hy, Limits{MemoryBytes: 1 << 26, Pids: 32})
	if err != nil || len(p.v2ctrls) != 0 || len(p.v1) != 2 || !p.v1[0].hier.Has("memory") || !p.v1[1].hier.Has("pids") {
		t.Fatalf("hybrid: %+v, %v", p, err)
	}
	if p, _ := route(hy, Limits{}); len(p.v1) != 0 {
		t.Fatalf("hybrid without limits needs no v1 group: %+v", p)
	}

	un := host(unifiedMountinfo, unifiedCgroup)
	un.V2.Controllers = []string{"cpu", "memory", "pids"}
	p, err = route(un, Limits{MemoryBytes: 1, Pids: 1, CPUQuotaCores: 1})
	if err != nil || strings.Join(p.v2ctrls, " ") != "memory pids cpu" || len(p.v1) != 0 {
		t.Fatalf("unified: %+v, %v", p, err)
	}
	un.V2.Controllers = []string{"pids"}
	_, err = route(un, Limits{MemoryBytes: 1})
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "memory controller") {
		t.Fatalf("missing memory controller: %v", err)
	}

	lg := host(legacyMountinfo, legacyCgroup)
	p, err = route(lg, Limits{CPUQuotaCores: 0.5})
	if err != nil || len(p.v1) != 2 {
		t.Fatalf("legacy: %+v, %v", p, err)
	}
	// cpu and cpuacct share one directory; the freezer is always there.
	if !p.v1[0].hier.Has("cpu") || strings.Join(p.v1[0].ctrls, " ") != "cpu" || !p.v1[1].hier.Has("freezer") {
		t.Fatalf("legacy plan: %+v", p)
	}

	// A CPU budget needs the tree's CPU time: a legacy host without
	// cpuacct cannot count it.
	noAcct := host(strings.Replace(legacyMountinfo, "614 610 0:28 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime master:13 - cgroup cgroup rw,cpu,cpuacct\n", "", 1),
		strings.Replace(legacyCgroup, "5:cpu,cpuacct:/docker/abc\n", "", 1))
	if _, err := route(noAcct, Limits{Pids: 8}); err != nil {
		t.Fatalf("no cpuacct, no budget: %v", err)
	}
	if _, err := route(noAcct, Limits{Pids: 8, CPUAccounting: true}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "cpuacct") {
		t.Fatalf("no cpuacct, a CPU budget: %v", err)
	}
	if _, err := route(lg, Limits{CPUAccounting: true}); err != nil {
		t.Fatalf("cpuacct there, a CPU budget: %v", err)
	}
}

func TestReadyUnavailable(t *testing.T) {
	_, _, err := Ready(&Host{Mode: Unavailable}, Limits{Pids: 1}, Options{})
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "cgroup filesystem") {
		t.Fatalf("got %v", err)
	}
	if _, _, err := Ready(&Host{Mode: Unified}, Limits{CPUQuotaCores: math.NaN()}, Options{}); err == nil {
		t.Fatal("NaN cores accepted")
	}
}

func TestSwapOnAndSwapLimit(t *testing.T) {
	dir := t.TempDir()
	old := procSwaps
	defer func() { procSwaps = old }()
	header := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	for _, c := range []struct {
		name, content string
		exists, on    bool
	}{
		{"header only", header, true, false},
		{"one device", header + "/dev/sda2 partition 1048572 0 -2\n", true, true},
		{"no file (no swap in the kernel)", "", false, false},
	} {
		procSwaps = filepath.Join(dir, c.name)
		if c.exists {
			if err := os.WriteFile(procSwaps, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := swapOn(); got != c.on {
			t.Errorf("%s: swapOn %v", c.name, got)
		}
	}
}

func TestPlacement(t *testing.T) {
	v2 := &Hierarchy{Mount: "/sys/fs/cgroup", Root: "/", Own: "/user.slice/app.scope"}
	leaf := &Hierarchy{Mount: "/sys/fs/cgroup", Root: "/", Own: "/user.slice/app.scope/" + SupervisorLeaf}
	nested := &Hierarchy{Mount: "/sys/fs/cgroup/unified", Root: "/ctr", Own: "/ctr/job"}
	for _, tc := range []struct {
		name   string
		hier   *Hierarchy
		parent string
		euid   int
		want   Placement
		bad    bool
	}{
		{"root", v2, "", 0, Placement{Parent: "/sys/fs/cgroup/" + DefaultV2Parent, Top: "/sys/fs/cgroup", Shared: true}, false},
		{"user in its own cgroup", v2, "", 1000, Placement{Parent: "/sys/fs/cgroup/user.slice/app.scope", Top: "/sys/fs/cgroup/user.slice/app.scope", Delegated: true}, false},
		{"user moved into the leaf", leaf, "", 1000, Placement{Parent: "/sys/fs/cgroup/user.slice/app.scope", Top: "/sys/fs/cgroup/user.slice/app.scope", Delegated: true}, false},
		{"explicit parent", v2, "/sandboxes/a", 1000, Placement{Parent: "/sys/fs/cgroup/sandboxes/a", Top: "/sys/fs/cgroup", Explicit: true}, false},
		{"mounted below the root", nested, "", 1000, Placement{Parent: "/sys/fs/cgroup/unified/job", Top: "/sys/fs/cgroup/unified/job", Delegated: true}, false},
		{"parent outside the mount", nested, "/other", 0, Placement{}, true},
	} {
		got, err := PlaceV2(tc.hier, tc.parent, tc.euid)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("%s: PlaceV2 = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	v1 := &Hierarchy{Mount: "/sys/fs/cgroup/memory", Root: "/", Own: "/job"}
	if got, err := PlaceV1(v1, ""); err != nil || got != (Placement{Parent: "/sys/fs/cgroup/memory/job", Top: "/sys/fs/cgroup/memory/job"}) {
		t.Errorf("PlaceV1 own = %+v, %v", got, err)
	}
	if got, err := PlaceV1(v1, "/s"); err != nil || got != (Placement{Parent: "/sys/fs/cgroup/memory/s", Top: "/sys/fs/cgroup/memory", Explicit: true}) {
		t.Errorf("PlaceV1 explicit = %+v, %v", got, err)
	}
}

func TestAdviceInTheCallersWords(t *testing.T) {
	words := func(r remedy.Remedy) string {
		switch r {
		case remedy.DelegatedScope:
			return "LAUNCH"
		case remedy.Invocation:
			return "PROG ..."
		}
		return "?"
	}
	e := &UnavailableError{Mode: Hybrid, Missing: "permission", Advice: AdviseDelegate}
	if got, want := e.Message(words), "cgroups: unavailable (hybrid host): missing permission; run inside a cgroup delegated to this user (e.g. LAUNCH PROG ...), or as root"; got != want {
		t.Errorf("Message:\n got %s\nwant %s", got, want)
	}
	if got := e.Error(); !strings.Contains(got, "(e.g. "+remedy.Plain(remedy.DelegatedScope)+" ") || strings.Contains(got, "--") {
		t.Errorf("Error() without the caller's words: %s", got)
	}
}
