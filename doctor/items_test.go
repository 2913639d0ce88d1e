package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/hostfacts"
	"sandbox-executable/mountns"
	"sandbox-executable/remedy"
)

func notes(it Item) string { return strings.Join(it.Notes, "\n") }

// cliWords says the remedies as the command line does.
func cliWords(r remedy.Remedy) string {
	switch r {
	case remedy.DelegatedScope:
		return "systemd-run --user --scope -p Delegate=yes"
	case remedy.Invocation:
		return "sandbox-executable ..."
	}
	return remedy.Plain(r)
}

func TestLandlockItem(t *testing.T) {
	lsmHost := Host{LSMs: []string{"capability", "lockdown", "yama", "apparmor"}}

	it := landlockItem(landlockFacts{abi: 7, errata: 0x7}, Host{})
	if it.Status != StatusOK || !it.Strict || it.Fix != "" {
		t.Errorf("ABI 7: %+v", it)
	}
	if want := "ABI 7 (errata 0x7): filesystem, refer, truncate, TCP, ioctl_dev, scoping, audit logging"; it.Detail != want {
		t.Errorf("ABI 7 detail = %q, want %q", it.Detail, want)
	}
	if !strings.Contains(notes(it), "errata fixed: 1 TCP socket identification, 2 scoped signal handling, 3 disconnected directory handling") {
		t.Errorf("ABI 7 notes: %s", notes(it))
	}

	it = landlockItem(landlockFacts{abi: 7, errata: 0x3 | 1<<5}, Host{})
	if it.Status != StatusOK || !strings.Contains(notes(it), "erratum 3 (disconnected directory handling) NOT fixed") || !strings.Contains(notes(it), "also 6 (unknown to this helper)") {
		t.Errorf("erratum 3 unfixed: %+v", it)
	}

	it = landlockItem(landlockFacts{abi: 3, errataErr: unix.EINVAL}, Host{})
	if it.Status != StatusOK || !strings.HasPrefix(it.Detail, "ABI 3 (errata n/a): filesystem, refer, truncate") {
		t.Errorf("ABI 3: %+v", it)
	}
	for _, want := range []string{"not reported by this kernel (EINVAL", "uses up to ABI 10;", "ABI 4 TCP (Linux 6.7)", "ABI 7 audit logging (Linux 6.15): --log-denials"} {
		if !strings.Contains(notes(it), want) {
			t.Errorf("ABI 3 notes lack %q:\n%s", want, notes(it))
		}
	}
	if strings.Contains(notes(it), "erratum 1") {
		t.Errorf("erratum 1 concerns ABI 4+, not 3:\n%s", notes(it))
	}

	it = landlockItem(landlockFacts{abi: 2}, Host{})
	if it.Status != StatusDegraded || !strings.Contains(it.Fix, "bookworm-backports") || !strings.Contains(it.Fix, "--fs-mode exact") {
		t.Errorf("ABI 2: %+v", it)
	}
	if !strings.Contains(notes(it), "truncate(2) and O_TRUNC outside the writable roots are not stopped") {
		t.Errorf("ABI 2 must say what truncate costs:\n%s", notes(it))
	}

	it = landlockItem(landlockFacts{abi: 11, errata: 0xf}, Host{})
	for _, want := range []string{"offers ABI 11; the helper uses up to 10 (not used: no_new_privs flag (11))",
		"ABI 8 tsync: used", "ABI 9 unix sockets: used", "ABI 10 UDP: used", "ABI 11 no_new_privs flag: not used: the spawn stage sets no_new_privs",
		"errata fixed: 1 TCP socket identification, 2 scoped signal handling, 3 disconnected directory handling, 4 creation of whiteout objects"} {
		if it.Status != StatusOK || !strings.Contains(notes(it), want) {
			t.Errorf("ABI 11 lacks %q: %+v", want, it)
		}
	}
	if !strings.HasSuffix(it.Detail, "audit logging, tsync, unix sockets, UDP, no_new_privs flag") {
		t.Errorf("ABI 11 detail: %s", it.Detail)
	}
	it = landlockItem(landlockFacts{abi: 12, errata: 0xf}, Host{})
	if !strings.Contains(it.Detail, "and ABI 12-12 features unknown to this helper") {
		t.Errorf("ABI 12: %+v", it)
	}

	it = landlockItem(landlockFacts{abiErr: unix.EOPNOTSUPP}, lsmHost)
	if it.Status != StatusMissing || !strings.Contains(it.Detail, "EOPNOTSUPP") || !strings.Contains(it.Fix, "lsm=landlock,lockdown,yama,apparmor") {
		t.Errorf("disabled at boot: %+v", it)
	}
	it = landlockItem(landlockFacts{abiErr: unix.ENOSYS, filtered: true}, Host{})
	if it.Status != StatusMissing || !strings.Contains(it.Fix, "landlock_restrict_self") {
		t.Errorf("filtered: %+v", it)
	}
	it = landlockItem(landlockFacts{abiErr: unix.ENOSYS}, Host{WSL: WSL{Detected: true, Version: 2}})
	if !strings.Contains(it.Fix, ".wslconfig") {
		t.Errorf("WSL 2: %+v", it)
	}
	if !strings.Contains(notes(it), "not readable") {
		t.Errorf("LSM note: %s", notes(it))
	}
}

func TestSeccompItem(t *testing.T) {
	f := seccompFacts{mode: 0, filters: 0, actions: hostfacts.SeccompActions(), library: "2.5.4"}
	it := seccompItem(f)
	if it.Status != StatusOK || it.Detail != "filter mode available (this process not filtered); actions: KILL_PROCESS, ERRNO, LOG, USER_NOTIF; libseccomp 2.5.4" {
		t.Errorf("all available: %+v", it)
	}

	f.mode, f.filters = 2, 3
	f.actions = hostfacts.SeccompActions()
	f.actions[3].Errno = unix.EOPNOTSUPP
	it = seccompItem(f)
	if it.Status != StatusOK || !strings.Contains(it.Detail, "lacking USER_NOTIF (EOPNOTSUPP)") || !strings.Contains(notes(it), "under 3 seccomp filter(s)") {
		t.Errorf("filtered, no USER_NOTIF: %+v", it)
	}

	f.actions = hostfacts.SeccompActions()
	f.actions[0].Errno = unix.EOPNOTSUPP
	if it = seccompItem(f); it.Status != StatusDegraded || !strings.Contains(it.Fix, "4.14") {
		t.Errorf("no KILL_PROCESS: %+v", it)
	}
	f.actions = hostfacts.SeccompActions()
	for i := range f.actions {
		f.actions[i].Errno = unix.EPERM
	}
	if it = seccompItem(f); it.Status != StatusDegraded || !strings.Contains(it.Fix, "allows seccomp(2)") {
		t.Errorf("seccomp(2) refused: %+v", it)
	}
	if it = seccompItem(seccompFacts{mode: -1}); it.Status != StatusMissing || !strings.Contains(it.Fix, "CONFIG_SECCOMP_FILTER") {
		t.Errorf("no seccomp: %+v", it)
	}
}

// cgroupTree makes dirs under a temporary directory and returns it.
func cgroupTree(t *testing.T, dirs ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// cgroupFactsOn are the facts of a hand-made host whose permissions access
// decides.
func cgroupFactsOn(h *cgroups.Host, euid int, access func(string) error) cgroupFacts {
	a := hostfacts.CgroupAccessOf(h, euid, access)
	f := &hostfacts.Facts{EUID: euid, Cgroups: h}
	if h.Mode == cgroups.Unavailable {
		f.Cgroups = nil
	}
	return cgroupFactsOf(f, &hostfacts.Diagnosis{CgroupAccess: &a})
}

func TestCgroupsUnified(t *testing.T) {
	root := cgroupTree(t, "user.slice/app.scope/sandbox-executable-supervisor", "other")
	own := filepath.Join(root, "user.slice/app.scope")
	if err := os.WriteFile(own+"/cgroup.controllers", []byte("cpu memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root+"/other/cgroup.kill", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := &cgroups.Host{Mode: cgroups.Unified, V2: &cgroups.Hierarchy{
		Controllers: []string{"cpu", "memory", "pids"}, Mount: root, Root: "/",
		Own: "/user.slice/app.scope/sandbox-executable-supervisor",
	}}
	var asked []string
	allow := func(p string) error { asked = append(asked, strings.TrimPrefix(p, root)); return nil }
	f := cgroupFactsOn(h, 1000, allow)
	it := cgroupsItem(f, Host{Systemd: true}, cliWords)
	if it.Status != StatusOK || !strings.Contains(notes(it), "delegated to uid 1000") || !strings.Contains(notes(it), "kill: cgroup.kill") {
		t.Errorf("delegated unified: %+v", it)
	}
	want := "/user.slice/app.scope /user.slice/app.scope/cgroup.procs /user.slice/app.scope/cgroup.subtree_control"
	if got := strings.Join(asked, " "); got != want {
		t.Errorf("checked %q, want %q (the supervisor leaf's parent)", got, want)
	}

	deny := func(p string) error {
		if strings.HasSuffix(p, "cgroup.procs") {
			return unix.EACCES
		}
		return nil
	}
	it = cgroupsItem(cgroupFactsOn(h, 1000, deny), Host{}, cliWords)
	if it.Status != StatusMissing || !strings.Contains(notes(it), "uid 1000 cannot create a group: not writable: "+own+"/cgroup.procs (EACCES)") {
		t.Errorf("not delegated: %+v", it)
	}
	// No systemd here: no systemd-run, and the delegation root makes.
	if strings.Contains(it.Fix, "systemd-run") || !strings.Contains(it.Fix, "delegated to this user (owning its cgroup.procs") {
		t.Errorf("fix: %q", it.Fix)
	}

	rofs := func(string) error { return unix.EROFS }
	if it = cgroupsItem(cgroupFactsOn(h, 0, rofs), Host{}, cliWords); it.Status != StatusMissing || !strings.Contains(it.Fix, "writable cgroup v2") {
		t.Errorf("read-only cgroupfs: %+v", it)
	}

	h.V2.Controllers = []string{"cpu"}
	if it = cgroupsItem(cgroupFactsOn(h, 0, allow), Host{}, cliWords); it.Status != StatusMissing || !strings.Contains(notes(it), "memory and pids controller is in no mounted hierarchy") {
		t.Errorf("no memory/pids: %+v", it)
	}
	if it = cgroupsItem(cgroupFactsOn(&cgroups.Host{Mode: cgroups.Unavailable}, 0, allow), Host{}, cliWords); it.Status != StatusMissing || !strings.Contains(it.Fix, "mount -t cgroup2") {
		t.Errorf("unavailable: %+v", it)
	}
}

func TestCgroupsHybrid(t *testing.T) {
	root := cgroupTree(t, "unified/sandbox-executable", "memory/process_api/x", "pids", "cpu", "cpuacct")
	if err := os.WriteFile(root+"/unified/sandbox-executable/cgroup.kill", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := &cgroups.Host{
		Mode: cgroups.Hybrid,
		V2:   &cgroups.Hierarchy{Controllers: []string{"hugetlb"}, Mount: root + "/unified", Root: "/", Own: "/"},
		V1: []cgroups.Hierarchy{
			{ID: 8, Controllers: []string{"pids"}, Mount: root + "/pids", Root: "/", Own: "/"},
			{ID: 4, Controllers: []string{"memory"}, Mount: root + "/memory", Root: "/", Own: "/process_api/x"},
			{ID: 2, Controllers: []string{"cpuacct"}, Mount: root + "/cpuacct", Root: "/", Own: "/"},
			{ID: 1, Controllers: []string{"cpu"}, Mount: root + "/cpu", Root: "/", Own: "/"},
		},
	}
	var asked []string
	allow := func(p string) error { asked = append(asked, strings.TrimPrefix(p, root)); return nil }
	it := cgroupsItem(cgroupFactsOn(h, 0, allow), Host{}, cliWords)
	if it.Status != StatusOK || !strings.HasPrefix(it.Detail, "hybrid: memory v1 "+root+"/memory, pids v1 "+root+"/pids, cpu v1 "+root+"/cpu") {
		t.Errorf("hybrid as root: %+v", it)
	}
	if got := strings.Join(asked, " "); got != "/unified/sandbox-executable /pids /memory/process_api/x" {
		t.Errorf("checked %q", got)
	}
	if !strings.Contains(notes(it), "CPU usage from v2 cpu.stat; kill: cgroup.kill") {
		t.Errorf("notes: %s", notes(it))
	}

	deny := func(string) error { return unix.EACCES }
	it = cgroupsItem(cgroupFactsOn(h, 65534, deny), Host{Systemd: true}, cliWords)
	if it.Status != StatusMissing || !strings.Contains(it.Fix, "systemd.unified_cgroup_hierarchy=1") || !strings.Contains(it.Fix, "systemd-run --user --scope -p Delegate=yes") {
		t.Errorf("hybrid, uid 65534: %+v", it)
	}
}

func nsFake(privileged bool) nsFacts {
	ok := nsAttempt{ok: true}
	return nsFacts{
		probes:    nsProbes{privileged: privileged, user: ok, mnt: ok, net: ok},
		euid:      1000,
		maxUserNS: 15000, maxMntNS: 15000, maxNetNS: 15000, unprivClone: -1, aaRestrict: -1,
	}
}

func TestNamespaceItems(t *testing.T) {
	f := nsFake(false)
	for _, it := range []Item{mountnsItem(f), netnsItem(f), usernsItem(f)} {
		if it.Status != StatusOK || !strings.Contains(it.Detail, "uid 1000 mapped to itself") {
			t.Errorf("%s: %+v", it.ID, it)
		}
	}
	if it := usernsItem(f); it.Strict {
		t.Error("userns must be informational")
	}

	eperm := nsAttempt{flags: "CLONE_NEWUSER|CLONE_NEWNS", errno: unix.EPERM, err: "fork/exec /bin/true: operation not permitted"}
	for _, c := range []struct {
		name   string
		set    func(*nsFacts)
		detail string
		fix    string
	}{
		{"apparmor", func(f *nsFacts) { f.aaRestrict = 1 }, "kernel.apparmor_restrict_unprivileged_userns is 1", "packaging/apparmor/sandbox-executable in /etc/apparmor.d with the installed binary's path in its attachment"},
		{"apparmor, this binary's path", func(f *nsFacts) { f.aaRestrict, f.exe = 1, "/home/u/bin/sandbox-executable" },
			"kernel.apparmor_restrict_unprivileged_userns is 1", "with this binary's path, /home/u/bin/sandbox-executable, in its attachment, and load it (sudo apparmor_parser -r)"},
		{"max_user_namespaces", func(f *nsFacts) { f.maxUserNS = 0 }, "user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000"},
		{"debian switch", func(f *nsFacts) { f.unprivClone = 0 }, "kernel.unprivileged_userns_clone is 0", "sysctl -w kernel.unprivileged_userns_clone=1"},
		{"max_mnt_namespaces", func(f *nsFacts) { f.maxMntNS = 0 }, "user.max_mnt_namespaces is 0", "sysctl -w user.max_mnt_namespaces=15000"},
		{"container filter", func(f *nsFacts) { f.filtered = true }, "seccomp filter on this process", "--security-opt seccomp=unconfined"},
		{"container filter, its root", func(f *nsFacts) { f.filtered, f.euid = true, 0 }, "seccomp filter on this process", "--cap-add SYS_ADMIN"},
		{"timeout", func(f *nsFacts) {
			f.probes.mnt = nsAttempt{flags: "CLONE_NEWNS", timedOut: true, err: "no answer within 150ms"}
		}, "no answer within 150ms: the clone did not finish in time", "doctor again"},
	} {
		f := nsFake(false)
		f.probes.mnt = eperm
		c.set(&f)
		it := mountnsItem(f)
		if it.Status != StatusMissing || !strings.Contains(it.Detail, c.detail) || !strings.Contains(it.Fix, c.fix) {
			t.Errorf("%s: %+v", c.name, it)
		}
		if !strings.Contains(notes(it), "only Landlock-only mode runs") {
			t.Errorf("%s: the mode consequence is missing: %s", c.name, notes(it))
		}
	}
	if it := mountnsItem(nsFacts{probes: nsProbes{mnt: eperm}}); !strings.HasPrefix(it.Detail, "clone(CLONE_NEWUSER|CLONE_NEWNS) failed: EPERM (operation not permitted)") {
		t.Errorf("detail: %q", it.Detail)
	}

	p := nsFake(true)
	p.probes.net = nsAttempt{flags: "CLONE_NEWNET", errno: unix.EPERM}
	p.aaRestrict = 1 // does not concern a process with CAP_SYS_ADMIN
	it := netnsItem(p)
	if it.Status != StatusMissing || !strings.Contains(it.Detail, "despite CAP_SYS_ADMIN") || !strings.Contains(notes(it), "network allowlist cannot be enforced") {
		t.Errorf("privileged netns refused: %+v", it)
	}
	if u := usernsItem(p); u.Status != StatusOK || !strings.Contains(notes(u), "kernel.apparmor_restrict_unprivileged_userns is 1") {
		t.Errorf("privileged userns: %+v", u)
	}

	f = nsFake(false)
	f.helper = mountns.Availability{OK: false, Why: "user namespaces are disabled"}
	if it := mountnsItem(f); !strings.Contains(notes(it), "pre-check (mountns.Probe) says no") {
		t.Errorf("disagreement not reported: %+v", it)
	}
}

func TestTryCloneBounds(t *testing.T) {
	// A 1 ns timer nearly always fires before the clone answers, but not
	// always: on a loaded machine the clone's goroutine can answer before
	// the select sees the timer (CI saw it once under -race). Five
	// answers in a row would be a timeout that does not work.
	for try := 1; ; try++ {
		a := attemptOf(mountns.Try(0, false, 1))
		if a.ok && !a.timedOut && try < 5 {
			continue
		}
		if a.ok || !a.timedOut {
			t.Errorf("1ns timeout, %d tries: %+v", try, a)
		}
		break
	}
	// An immediate refusal is the refusal, never "no answer" (the clone's
	// goroutine cancels its context as it returns: racing that, it was
	// reported as a timeout, however long the timeout). CLONE_NEWUSER with
	// CLONE_FS is EINVAL at once; the timeout is long so that a loaded
	// machine cannot make a real timeout of it.
	for i := 0; i < 200; i++ {
		a := attemptOf(mountns.Try(syscall.CLONE_NEWUSER|syscall.CLONE_FS, true, 10*time.Second))
		if a.ok || a.timedOut || a.errno != syscall.EINVAL {
			t.Fatalf("try %d: an immediate EINVAL reported as %+v", i, a)
		}
	}
}

func TestComputeOK(t *testing.T) {
	items := []Item{{ID: "a", Strict: true, Status: StatusOK}, {ID: "b", Status: StatusMissing}}
	if !computeOK(items) {
		t.Error("an informational item must not decide OK")
	}
	items[0].Status = StatusDegraded
	if computeOK(items) {
		t.Error("a degraded strict item must make OK false")
	}
}

// Where abstract names are mediated (no Landlock scoping) and sock_diag
// cannot list unix sockets, doctor says that a run sharing the network is
// refused every abstract name, and how to load what is missing.
func TestNetnsSaysWhenAbstractNamesCannotBeMediated(t *testing.T) {
	f := nsFake(true)
	f.abstractMediated, f.diagErr = true, "no such file or directory"
	if n := notes(netnsItem(f)); !strings.Contains(n, "refused every abstract name") || !strings.Contains(n, "modprobe unix_diag") {
		t.Errorf("no note on the missing unix_diag: %q", n)
	}
	for _, g := range []nsFacts{{abstractMediated: false, diagErr: "x"}, {abstractMediated: true}} {
		g.probes = f.probes
		if n := notes(netnsItem(g)); strings.Contains(n, "abstract") {
			t.Errorf("%+v: a note where none is due: %q", g, n)
		}
	}
}
