package cgroups

import (
	"slices"
	"testing"
)

// Sample texts: a systemd host in unified mode, a systemd host in hybrid
// mode (cpu,cpuacct co-mounted), this project's machines (hybrid, cpu and
// cpuacct apart, memory cgroup owned by the machine), and a v1-only
// container that sees only its own part of each hierarchy.
const (
	unifiedMountinfo = `22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
26 24 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	unifiedCgroup = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope\n"

	hybridMountinfo = `25 24 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:8 - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
27 25 0:25 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,xattr,name=systemd
30 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct
31 25 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
32 25 0:30 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,pids
33 25 0:31 / /sys/fs/cgroup/freezer rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,freezer
`
	hybridCgroup = `12:pids:/user.slice/user-1000.slice/session-2.scope
11:memory:/user.slice/user-1000.slice/session-2.scope
5:cpu,cpuacct:/user.slice
4:freezer:/
1:name=systemd:/user.slice/user-1000.slice/session-2.scope
0::/user.slice/user-1000.slice/session-2.scope
`

	machineMountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	machineCgroup = `9:name=systemd:/
8:pids:/
7:blkio:/
6:freezer:/
5:devices:/
4:memory:/process_api/0df07c48bf74d58ca0d3e4b5609fdead
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
`

	legacyMountinfo = `600 590 0:50 / / rw,relatime - overlay overlay rw
610 600 0:52 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755
611 610 0:29 /docker/abc /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:14 - cgroup cgroup rw,memory
612 610 0:30 /docker/abc /sys/fs/cgroup/pids ro,nosuid,nodev,noexec,relatime master:15 - cgroup cgroup rw,pids
613 610 0:31 /docker/abc /sys/fs/cgroup/freezer ro,nosuid,nodev,noexec,relatime master:16 - cgroup cgroup rw,freezer
614 610 0:28 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid,nodev,noexec,relatime master:13 - cgroup cgroup rw,cpu,cpuacct
615 610 0:25 /docker/abc /sys/fs/cgroup/systemd ro,nosuid,nodev,noexec,relatime master:10 - cgroup cgroup rw,xattr,name=systemd
`
	legacyCgroup = `12:pids:/docker/abc
11:memory:/docker/abc/inner
5:cpu,cpuacct:/docker/abc
4:freezer:/docker/abc
1:name=systemd:/docker/abc
`
)

func host(mi, pc string) *Host { return buildHost(parseMountinfo(mi), parseProcCgroup(pc)) }

func TestBuildHostUnified(t *testing.T) {
	h := host(unifiedMountinfo, unifiedCgroup)
	if h.Mode != Unified || h.V2 == nil || len(h.V1) != 0 {
		t.Fatalf("got %+v", h)
	}
	if h.V2.Mount != "/sys/fs/cgroup" || h.V2.Own != "/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope" {
		t.Fatalf("v2 = %+v", h.V2)
	}
	d, err := h.V2.Dir(h.V2.Own)
	if err != nil || d != "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope" {
		t.Fatalf("Dir = %q, %v", d, err)
	}
}

func TestBuildHostHybrid(t *testing.T) {
	h := host(hybridMountinfo, hybridCgroup)
	if h.Mode != Hybrid || h.V2 == nil || h.V2.Mount != "/sys/fs/cgroup/unified" {
		t.Fatalf("got %+v", h)
	}
	cpu, acct := h.V1For("cpu"), h.V1For("cpuacct")
	if cpu == nil || cpu != acct || cpu.Mount != "/sys/fs/cgroup/cpu,cpuacct" || cpu.Own != "/user.slice" {
		t.Fatalf("cpu = %+v, cpuacct = %+v", cpu, acct)
	}
	mem := h.V1For("memory")
	if mem == nil || mem.ID != 11 || mem.Mount != "/sys/fs/cgroup/memory" {
		t.Fatalf("memory = %+v", mem)
	}
	if d, _ := mem.Dir(mem.Own); d != "/sys/fs/cgroup/memory/user.slice/user-1000.slice/session-2.scope" {
		t.Fatalf("memory dir = %q", d)
	}
	if h.V1For("name=systemd") == nil || h.V1For("blkio") != nil {
		t.Fatal("named hierarchy missing or blkio invented")
	}
}

func TestBuildHostMachine(t *testing.T) {
	h := host(machineMountinfo, machineCgroup)
	if h.Mode != Hybrid || h.V2.Mount != "/sys/fs/cgroup/unified" || h.V2.Own != "/" {
		t.Fatalf("got %+v", h)
	}
	cpu, acct := h.V1For("cpu"), h.V1For("cpuacct")
	if cpu == nil || acct == nil || cpu == acct || acct.Mount != "/sys/fs/cgroup/cpuacct" {
		t.Fatalf("cpu = %+v, cpuacct = %+v", cpu, acct)
	}
	mem := h.V1For("memory")
	if d, _ := mem.Dir(mem.Own); d != "/sys/fs/cgroup/memory/process_api/0df07c48bf74d58ca0d3e4b5609fdead" {
		t.Fatalf("memory dir = %q", d)
	}
	if d, _ := h.V1For("pids").Dir("/"); d != "/sys/fs/cgroup/pids" {
		t.Fatalf("pids root = %q", d)
	}
}

func TestBuildHostLegacyPartialMount(t *testing.T) {
	h := host(legacyMountinfo, legacyCgroup)
	if h.Mode != Legacy || h.V2 != nil {
		t.Fatalf("got %+v", h)
	}
	mem := h.V1For("memory")
	if mem.Root != "/docker/abc" {
		t.Fatalf("memory = %+v", mem)
	}
	if d, err := mem.Dir(mem.Own); err != nil || d != "/sys/fs/cgroup/memory/inner" {
		t.Fatalf("Dir(own) = %q, %v", d, err)
	}
	if d, err := h.V1For("pids").Dir("/docker/abc"); err != nil || d != "/sys/fs/cgroup/pids" {
		t.Fatalf("Dir(root) = %q, %v", d, err)
	}
	if _, err := mem.Dir("/elsewhere"); err == nil {
		t.Fatal("a path outside the mounted part must not map")
	}
	if _, err := mem.Dir("/docker/abcdef"); err == nil {
		t.Fatal("a sibling with a common prefix must not map")
	}
}

func TestBuildHostNone(t *testing.T) {
	h := host("22 1 0:21 / /proc rw - proc proc rw\n", "")
	if h.Mode != Unavailable || h.V2 != nil || len(h.V1) != 0 {
		t.Fatalf("got %+v", h)
	}
	// A v1 line whose hierarchy is not mounted here is left out.
	h = host(unifiedMountinfo, "4:memory:/x\n0::/\n")
	if h.Mode != Unified || len(h.V1) != 0 {
		t.Fatalf("got %+v", h)
	}
	// Only a named v1 hierarchy next to cgroup2: the controllers are on v2.
	h = host(hybridMountinfo, "1:name=systemd:/\n0::/\n")
	if h.Mode != Unified || len(h.V1) != 1 {
		t.Fatalf("got %+v", h)
	}
}

func TestParseMountinfoEscapes(t *testing.T) {
	m := parseMountinfo(`50 25 0:40 /a\040b /mnt/cg\040two rw - cgroup2 none rw` + "\n")
	if len(m) != 1 || m[0].point != "/mnt/cg two" || m[0].root != "/a b" || !m[0].v2 {
		t.Fatalf("got %+v", m)
	}
	if got := unescapeMount(`x\134y\`); got != `x\y\` {
		t.Fatalf("unescape = %q", got)
	}
}

func TestParseProcCgroup(t *testing.T) {
	got := parseProcCgroup("5:cpu,cpuacct:/a:b\n0::/x (deleted)\nbad\n")
	if len(got) != 2 || got[0].id != 5 || !slices.Equal(got[0].controllers, []string{"cpu", "cpuacct"}) || got[0].path != "/a:b" || got[1].path != "/x" || got[1].controllers != nil {
		t.Fatalf("got %+v", got)
	}
}

func TestPickMountPrefersOwnRoot(t *testing.T) {
	mi := `1 0 0:1 /other /a rw - cgroup2 cgroup2 rw
2 0 0:1 / /b rw - cgroup2 cgroup2 rw
`
	h := host(mi, "0::/mine\n")
	if h.V2.Mount != "/b" {
		t.Fatalf("mount = %q", h.V2.Mount)
	}
}
