package supervisor

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sandbox-executable/fsmed"
	"sandbox-executable/hostfacts"
	"sandbox-executable/landlock"
	"sandbox-executable/mountns"
	"sandbox-executable/policy"
	"sandbox-executable/seccomp"
	"sandbox-executable/spawn"
)

func TestPrivateTmpSize(t *testing.T) {
	for _, c := range []struct {
		lim  policy.Limits
		n    int
		want uint64
		why  string
	}{
		{policy.Limits{FileSizeBytes: 1 << 20, MemoryBytes: 512 << 20}, 1, 1 << 20, "max_disk_mb"},
		{policy.Limits{FileSizeBytes: 4 << 30}, 1, 4 << 30, "max_disk_mb"},
		{policy.Limits{FileSizeBytes: 1 << 30, MemoryBytes: 512 << 20}, 1, 256 << 20, "half the memory limit"},
		{policy.Limits{MemoryBytes: 256 << 20}, 1, 128 << 20, "half the memory limit"},
		{policy.Limits{MemoryBytes: 256 << 20}, 2, 64 << 20, "shared by 2"},
		{policy.Limits{MemoryBytes: 8 << 30}, 1, defaultTmpBytes, "default"},
		{policy.Limits{}, 2, defaultTmpBytes, "default"},
	} {
		got, why := privateTmpSize(c.lim, c.n)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%+v, %d: %d (%s), want %d (%s)", c.lim, c.n, got, why, c.want, c.why)
		}
	}
}

// planFor resolves a policy as the command line does, in a temp workspace.
func planFor(t *testing.T, policyJSON string) *policy.Plan {
	t.Helper()
	ws := t.TempDir()
	pol, err := policy.DecodePolicy([]byte(policyJSON))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Resolve(policy.Input{Policy: *pol, Seccomp: pol.DerivedSeccompProfile(), Limits: pol.DerivedResourceLimits(),
		PolicyCwd: ws, Environ: []string{"HOME=" + ws, "PATH=/usr/bin:/bin"}, Syscalls: seccomp.Table{}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Hosts, as hostfacts would find them.
var (
	rootHost = hostfacts.Facts{LandlockABI: 7, SocketMediation: true,
		Namespaces: mountns.Availability{OK: true, Privileged: true, Network: true, Why: "CAP_SYS_ADMIN"}}
	userHost = hostfacts.Facts{UID: 1000, GID: 1000, EUID: 1000, LandlockABI: 7, SocketMediation: true,
		Namespaces: mountns.Availability{OK: true, Network: true, Why: "unprivileged user namespaces are allowed"}}
	// A container whose seccomp filter refuses namespaces, on an older
	// kernel.
	noNamespaces = hostfacts.Facts{UID: 1000, GID: 1000, EUID: 1000, LandlockABI: 3,
		Namespaces: mountns.Availability{Why: "clone: operation not permitted", Fix: "run the container with --security-opt seccomp=unconfined"}}
	noLandlock = hostfacts.Facts{Namespaces: mountns.Availability{OK: true, Privileged: true, Why: "CAP_SYS_ADMIN"}}
)

// TestPrepareDecides: the filesystem mode, the network mode, the process
// world and the degradations are decided from the host's facts alone, with
// no kernel object made: the same inputs give the same decisions on any
// machine.
func TestPrepareDecides(t *testing.T) {
	const (
		ws      = `{"type":"workspace_write","writable_roots":[],"network_access":false}`
		wsNet   = `{"type":"workspace_write","writable_roots":[],"network_access":true,"seccomp_profile":{"allow_network_sockets":true}}`
		allowed = `{"type":"workspace_write","writable_roots":[],"network_access":true,"network_allowlist":[{"domain":"example.com","port":443,"protocol":"tcp"}],"seccomp_profile":{"allow_network_sockets":true}}`
	)
	for _, c := range []struct {
		name      string
		policy    string
		facts     hostfacts.Facts
		cfg       Config
		fsMode    string
		network   string // a mechanism the network report must name
		netns     bool
		refused   string // a refusal must contain this
		degraded  string // a degradation must contain this
		processNS string // the namespaces the program gets
	}{
		{name: "root, no network", policy: ws, facts: rootHost, fsMode: FSExact, network: "an empty network namespace", netns: true,
			processNS: "pid ipc uts mount network cgroup"},
		{name: "user namespace", policy: ws, facts: userHost, fsMode: FSExact, netns: true, processNS: "pid ipc uts mount user network cgroup"},
		{name: "full network", policy: wsNet, facts: rootHost, fsMode: FSExact, network: "the host's network", processNS: "pid ipc uts mount cgroup"},
		{name: "allowlist proxy", policy: allowed, facts: rootHost, fsMode: FSExact, network: "a filtering proxy outside", netns: true},
		{name: "namespaces but no network namespace", policy: ws, cfg: Config{},
			facts:  hostfacts.Facts{LandlockABI: 7, Namespaces: mountns.Availability{OK: true, Privileged: true, NetworkWhy: "loopback: operation not permitted"}},
			fsMode: FSExact, network: "seccomp: no sockets but AF_UNIX", netns: false, processNS: "pid ipc uts mount cgroup"},
		{name: "landlock mode asked for", policy: ws, facts: rootHost, cfg: Config{FSMode: FSLandlock}, fsMode: FSLandlock, netns: false,
			processNS: "pid ipc uts mount cgroup"},
		{name: "no namespaces refused", policy: ws, facts: noNamespaces, refused: "refusing to run: clone: operation not permitted; run the container with --security-opt seccomp=unconfined, or pass --allow-degraded"},
		{name: "no namespaces degraded", policy: ws, facts: noNamespaces, cfg: Config{AllowDegraded: true}, fsMode: FSLandlock,
			degraded: "no mount namespace"},
		{name: "allowlist without namespaces, old Landlock", policy: allowed, facts: noNamespaces, cfg: Config{AllowDegraded: true},
			refused: "Landlock ABI 3 cannot restrict TCP at all"},
		{name: "exact asked for, none to be had", policy: ws, facts: noNamespaces, cfg: Config{FSMode: FSExact}, refused: "the exact filesystem mode needs a mount namespace: clone: operation not permitted"},
		{name: "no Landlock refused", policy: ws, facts: noLandlock, refused: "refusing to run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Plan, cfg.Argv, cfg.Cwd, cfg.TempDir, cfg.RunID = planFor(t, c.policy), []string{"/bin/true"}, "/", "/tmp", "test"
			f := c.facts
			pr, err := Prepare(cfg, &f)
			if c.refused != "" {
				var re *RefusedError
				if !errors.As(err, &re) || !strings.Contains(re.Reason, c.refused) {
					t.Fatalf("got %v, %v; want a refusal with %q", pr != nil, err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e := pr.Enforcement
			if e.Filesystem.Mode != c.fsMode {
				t.Errorf("filesystem mode %s, want %s", e.Filesystem.Mode, c.fsMode)
			}
			if c.network != "" && !strings.Contains(strings.Join(e.Network.Mechanism, "; "), c.network) {
				t.Errorf("network %v, want %q", e.Network.Mechanism, c.network)
			}
			if pr.net.netns != c.netns {
				t.Errorf("network namespace %v, want %v", pr.net.netns, c.netns)
			}
			if c.processNS != "" && strings.Join(e.Process.Namespaces, " ") != c.processNS {
				t.Errorf("namespaces %v, want %s", e.Process.Namespaces, c.processNS)
			}
			if got := strings.Join(pr.Degradations, "; "); (c.degraded == "") != (got == "") || !strings.Contains(got, c.degraded) {
				t.Errorf("degradations %q, want %q", got, c.degraded)
			}
			// What Run carries out is decided here: the private temp dir
			// is named, in the environment, in the mounts and in
			// Landlock; the proxy's address is in the environment.
			tmp := "/tmp/" + tmpPrefix + "test"
			if pr.tmpDir != tmp || !slices.Contains(pr.env, "TMPDIR="+tmp) {
				t.Errorf("temp dir %q, env %v", pr.tmpDir, pr.env)
			}
			if pr.View != nil && !slices.ContainsFunc(pr.View.Ops, func(o spawn.Op) bool { return o.Target() == tmp }) {
				t.Errorf("no mount for the temp dir in the view")
			}
			if pr.View != nil && !slices.ContainsFunc(pr.freshRules, func(o spawn.Op) bool { return o.Target() == tmp }) {
				t.Errorf("no Landlock rule for the temp dir's tmpfs in the child")
			}
			if !slices.ContainsFunc(pr.Landlock.Rules, func(r landlock.Rule) bool { return r.Path == tmp && r.Required }) {
				t.Errorf("no Landlock rule for the temp dir")
			}
			if strings.Contains(c.network, "proxy") && !slices.Contains(pr.env, "HTTPS_PROXY=http://127.0.0.1:3128") {
				t.Errorf("proxy env %v", pr.env)
			}
		})
	}
}

// TestPrepareSharedTmp: with a mount namespace the private temp dir is a
// tmpfs on the user's shared mount point, given its Landlock rule only in
// the child (on the tmpfs, never on the host's directory); without one, or
// when the host facts found the shared one unfit, it is a directory of
// the run's own.
func TestPrepareSharedTmp(t *testing.T) {
	const ws = `{"type":"workspace_write","writable_roots":[],"network_access":false}`
	shared := "/tmp/sandbox-executable-tmp-uid0"
	own := "/tmp/" + tmpPrefix + "test"
	for _, c := range []struct {
		name      string
		sharedTmp string
		fsMode    string
		want      string
	}{
		{"exact mode", shared, FSExact, shared},
		{"exact mode, shared mount point unfit", "", FSExact, own},
		{"landlock mode", shared, FSLandlock, own},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := rootHost
			f.SharedTmp = c.sharedTmp
			cfg := Config{FSMode: c.fsMode, Plan: planFor(t, ws), Argv: []string{"/bin/true"}, Cwd: "/", TempDir: "/tmp", RunID: "test"}
			pr, err := Prepare(cfg, &f)
			if err != nil {
				t.Fatal(err)
			}
			if pr.tmpDir != c.want || !slices.Contains(pr.env, "TMPDIR="+c.want) || pr.tmpShared != (c.want == shared) {
				t.Errorf("temp dir %q (shared %v), env %v; want %s", pr.tmpDir, pr.tmpShared, pr.env, c.want)
			}
			hostRule := slices.ContainsFunc(pr.Landlock.Rules, func(r landlock.Rule) bool { return r.Path == c.want })
			if hostRule == (c.want == shared) {
				t.Errorf("a Landlock rule on the host's %s: %v", c.want, hostRule)
			}
			if c.fsMode == FSExact && !slices.ContainsFunc(pr.freshRules, func(o spawn.Op) bool { return o.Target() == c.want }) {
				t.Errorf("no Landlock rule for the temp dir's tmpfs in the child")
			}
		})
	}
}

// TestPrepareProtectsTheStateDirectories: whatever the policy, the state
// directories the facts name are denied, existing or not.
func TestPrepareProtectsTheStateDirectories(t *testing.T) {
	state, missing := t.TempDir(), filepath.Join(t.TempDir(), "not-yet")
	f := rootHost
	f.StateDirs = []string{state, missing}
	cfg := Config{Plan: planFor(t, `{"type":"workspace_write","writable_roots":[]}`), Argv: []string{"/bin/true"}, Cwd: "/", TempDir: "/tmp", RunID: "x", AllowDegraded: true}
	pr, err := Prepare(cfg, &f)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{state, missing} {
		if !slices.ContainsFunc(pr.Plan.Filesystem.ReadDenied, func(p policy.DeniedPath) bool { return p.Path == d }) {
			t.Errorf("%s is not denied: %+v", d, pr.Plan.Filesystem.ReadDenied)
		}
	}
	if slices.ContainsFunc(cfg.Plan.Filesystem.ReadDenied, func(p policy.DeniedPath) bool { return p.Path == state }) {
		t.Errorf("the caller's Plan was changed")
	}
}

// TestPrepareMediatesTheTopLevel: in Landlock-only mode, where the host
// lets the supervisor read the program, a workspace without .git (split
// around the names it lacks) gets the file calls sent to the service, with
// its protected names, its identity and the roots the mediating thread may
// write beneath; without that fact, or in exact mode, nothing is mediated.
func TestPrepareMediatesTheTopLevel(t *testing.T) {
	ws := `{"type":"workspace_write","writable_roots":[]}`
	for _, c := range []struct {
		name  string
		mode  string
		files bool
		want  bool
	}{
		{"landlock mode", FSLandlock, true, true},
		{"landlock mode, no mediation here", FSLandlock, false, false},
		{"exact mode", FSExact, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := rootHost
			f.FileMediation = c.files
			plan := planFor(t, ws)
			cfg := Config{Plan: plan, Argv: []string{"/bin/true"}, Cwd: plan.PolicyCwd, TempDir: t.TempDir(), RunID: "x", FSMode: c.mode}
			pr, err := Prepare(cfg, &f)
			if err != nil {
				t.Fatal(err)
			}
			rec := pr.Service()
			if got := rec.Files != nil; got != c.want {
				t.Fatalf("mediated: %v, want %v", got, c.want)
			}
			mediated := slices.ContainsFunc(pr.hostRules, func(r policy.SyscallRule) bool { return r.Syscall == "mkdirat" })
			if mediated != c.want {
				t.Errorf("mkdirat sent to the supervisor: %v, want %v", mediated, c.want)
			}
			if !c.want {
				return
			}
			root := plan.PolicyCwd
			i := slices.IndexFunc(rec.Files.Dirs, func(d fsmed.Dir) bool { return d.Path == root })
			if i < 0 {
				t.Fatalf("the root %s is not mediated: %+v", root, rec.Files.Dirs)
			}
			d := rec.Files.Dirs[i]
			if d.Ino == 0 || !slices.Contains(d.Names, ".git") || !slices.Contains(d.Names, ".vtcode") {
				t.Errorf("the root's entry: %+v", d)
			}
			if !slices.Contains(rec.Files.Roots, root) {
				t.Errorf("the thread's roots %v lack %s", rec.Files.Roots, root)
			}
			said := false
			for _, n := range pr.Landlock.Narrowed {
				if n.Dir == root && n.Effect == landlock.WriteSplitEffect {
					t.Errorf("the root's narrowing says its top level gains no entries")
				}
				said = said || n.Dir == root && strings.Contains(n.Effect, "supervisor makes")
			}
			if !said {
				t.Errorf("the root's narrowing does not say it is mediated: %+v", pr.Landlock.Narrowed)
			}
		})
	}
}
