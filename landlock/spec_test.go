package landlock

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sandbox-executable/policy"
)

// tree makes directories and files (names ending in "/" are directories)
// under a temp dir and returns it.
func tree(t *testing.T, names ...string) string {
	t.Helper()
	base := t.TempDir()
	for _, n := range names {
		p := filepath.Join(base, n)
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

func plan(roots []string, readDenied, writeDenied []string) *policy.Plan {
	p := &policy.Plan{Network: policy.Network{Mode: policy.NetworkNone}}
	for _, r := range roots {
		p.Filesystem.WritableRoots = append(p.Filesystem.WritableRoots, policy.WritablePath{Path: r})
	}
	for _, d := range readDenied {
		p.Filesystem.ReadDenied = append(p.Filesystem.ReadDenied, policy.DeniedPath{Path: d})
	}
	for _, d := range writeDenied {
		p.Filesystem.WriteDenied = append(p.Filesystem.WriteDenied, policy.DeniedPath{Path: d})
	}
	return p
}

// grants reports the access the rules give to path (the union of the rules
// on it and on its ancestors), as Landlock computes it once the runner has
// listed each split directory: its entries that exist now, but symbolic
// links and the excepted names.
func grants(s *Spec, path string) AccessFS {
	var a AccessFS
	for _, r := range s.Rules {
		if !r.Entries {
			if r.Path == path || policy.Beneath(path, r.Path) {
				a |= r.Access
			}
			continue
		}
		if !policy.Beneath(path, r.Path) {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(path, r.Path), "/"), "/")
		if fi, err := os.Lstat(filepath.Join(r.Path, name)); err == nil && fi.Mode()&os.ModeSymlink == 0 && !slices.Contains(r.Except, name) {
			a |= r.Access
		}
	}
	return a
}

func TestLandlockOnlySplitsAlongDeniedPaths(t *testing.T) {
	base := tree(t, "home/.ssh/id_rsa", "home/docs/notes", "home/.bashrc", "ws/.git/config", "ws/src/main.c", "ws/README")
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	p := plan([]string{ws}, []string{filepath.Join(home, ".ssh")}, []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".codex")})
	s := Compute(p, Options{ABI: 7})
	read := readRights | ReadDir
	for _, c := range []struct {
		path string
		want AccessFS
		none AccessFS
	}{
		{filepath.Join(home, ".ssh", "id_rsa"), 0, read | writeRights},
		{filepath.Join(home, ".ssh"), 0, read},
		{filepath.Join(home, "docs", "notes"), read, writeRights},
		{filepath.Join(home, ".bashrc"), read, writeRights},
		{"/usr/bin/true", read, writeRights},
		{filepath.Join(ws, "src", "main.c"), read | writeRights, 0},
		{filepath.Join(ws, ".git", "config"), read, writeRights},
		// The root's top level is narrowed: entries can be written but not
		// created or removed there.
		{filepath.Join(ws, "README"), read | WriteFile | Truncate, 0},
		{ws, read, writeRights},
	} {
		got := grants(s, c.path)
		if got&c.want != c.want {
			t.Errorf("%s: granted %s, missing %s", c.path, got, c.want&^got)
		}
		if got&c.none != 0 {
			t.Errorf("%s: granted %s, must not have %s", c.path, got, got&c.none)
		}
	}
	split := map[string]bool{}
	for _, n := range s.Narrowed {
		split[n.Dir] = true
	}
	for _, d := range []string{"/", home, ws} {
		if !split[d] {
			t.Errorf("%s not recorded as narrowed: %+v", d, s.Narrowed)
		}
	}
	for _, r := range s.Rules {
		if r.Access&(MakeChar|MakeBlock) != 0 {
			t.Errorf("%s granted device creation", r.Path)
		}
	}
}

// TestSplitIsListedByTheRun: a split directory is one rule, whose entries
// the run lists at its start, with the names on the way to a denied path
// excepted: the decision reads no listing, so an entry made after it is
// granted like the others, and an excepted name never is.
func TestSplitIsListedByTheRun(t *testing.T) {
	base := tree(t, "home/.ssh/id_rsa", "home/.config/gh/hosts.yml", "home/docs/notes", "ws/README")
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	gh := filepath.Join(home, ".config", "gh")
	s := Compute(plan([]string{ws}, []string{filepath.Join(home, ".ssh"), gh}, nil), Options{ABI: 7})
	entries := map[string]Rule{}
	for _, r := range s.Rules {
		if r.Entries {
			entries[r.Path] = r
		} else if policy.Beneath(r.Path, home) {
			t.Errorf("a rule of its own beneath the split home: %+v", r)
		}
	}
	for dir, except := range map[string][]string{
		home:                           {".config", ".ssh"},
		filepath.Join(home, ".config"): {"gh"},
		"/":                            {strings.Split(base, "/")[1]},
	} {
		r, ok := entries[dir]
		if !ok {
			t.Errorf("%s: not split: %+v", dir, s.Rules)
			continue
		}
		if !slices.Equal(r.Except, except) || r.Access&ReadFile == 0 || r.Required != (dir == "/") {
			t.Errorf("%s: %+v, want the entries but %v", dir, r, except)
		}
	}
	later := filepath.Join(home, "made-later")
	if err := os.WriteFile(later, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("docs", filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{later: true, filepath.Join(home, "docs", "notes"): true, filepath.Join(home, "link", "notes"): false,
		filepath.Join(home, ".ssh", "id_rsa"): false, filepath.Join(gh, "hosts.yml"): false, filepath.Join(home, ".config", "other"): false} {
		if got := grants(s, path)&ReadFile != 0; got != want {
			t.Errorf("%s: readable %v, want %v", path, got, want)
		}
	}
}

func TestExactModeGrantsWholeSubtrees(t *testing.T) {
	base := tree(t, "home/.ssh/id_rsa", "ws/.git/config")
	ws := filepath.Join(base, "ws")
	p := plan([]string{ws}, []string{filepath.Join(base, "home", ".ssh")}, []string{filepath.Join(ws, ".git")})
	s := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true})
	if len(s.Narrowed) != 0 {
		t.Errorf("exact mode narrowed: %+v", s.Narrowed)
	}
	if got := grants(s, "/anything"); got != readRights|ReadDir {
		t.Errorf("/ grants %s", got)
	}
	if got := grants(s, filepath.Join(ws, "x")); got&writeRights != writeRights {
		t.Errorf("root grants %s", got)
	}
}

func TestGapsPerABI(t *testing.T) {
	p := plan(nil, nil, nil)
	for _, c := range []struct {
		abi      int
		opt      Options
		rights   []string
		boundary bool
	}{
		{0, Options{}, []string{"landlock"}, true},
		{1, Options{}, []string{"refer", "truncate", "net", "ioctl_dev", "scope"}, true},
		{2, Options{}, []string{"truncate", "net", "ioctl_dev", "scope"}, true},
		{2, Options{ReadOnlyOutsideRoots: true}, []string{"truncate", "net", "ioctl_dev", "scope"}, false},
		{3, Options{}, []string{"net", "ioctl_dev", "scope"}, false},
		{6, Options{}, nil, false},
		{7, Options{}, nil, false},
	} {
		c.opt.ABI = c.abi
		s := Compute(p, c.opt)
		var names []string
		boundary := false
		for _, g := range s.Gaps {
			names = append(names, g.Right)
			boundary = boundary || g.WriteBoundary
		}
		if strings.Join(names, ",") != strings.Join(c.rights, ",") || boundary != c.boundary {
			t.Errorf("ABI %d %+v: gaps %v boundary %v, want %v %v", c.abi, c.opt, names, boundary, c.rights, c.boundary)
		}
		if c.abi >= 1 && s.HandledFS != fsRightsAt(c.abi) {
			t.Errorf("ABI %d handles %s", c.abi, s.HandledFS)
		}
		if c.abi < 2 && s.HandledFS&Refer != 0 {
			t.Errorf("ABI %d handles refer", c.abi)
		}
	}
}

func TestNetworkAndScopes(t *testing.T) {
	for _, c := range []struct {
		mode  policy.NetworkMode
		abi   int
		proxy bool // the allowlist proxy on the host's loopback (WithPort)
		net   uint64
		ports int
	}{
		{policy.NetworkNone, 7, false, netBindTCP | netConnectTCP, 0},
		{policy.NetworkFull, 7, false, 0, 0},
		{policy.NetworkAllowlist, 7, false, 0, 0},
		{policy.NetworkAllowlist, 7, true, netConnectTCP, 1},
		{policy.NetworkAllowlist, 3, true, 0, 0},
		{policy.NetworkNone, 3, false, 0, 0},
	} {
		p := plan(nil, nil, nil)
		p.Network.Mode = c.mode
		s := Compute(p, Options{ABI: c.abi})
		if c.proxy {
			s = s.WithPort(3128)
		}
		if s.HandledNet != c.net || len(s.Ports) != c.ports {
			t.Errorf("%s ABI %d: net %x ports %v", c.mode, c.abi, s.HandledNet, s.Ports)
		}
		if (c.abi >= 6) != (s.Scoped == scopeAbstractUnix|scopeSignal) {
			t.Errorf("ABI %d scoped %x", c.abi, s.Scoped)
		}
	}
}

func TestReadsByMountsHandlesOnlyWrites(t *testing.T) {
	base := tree(t, "ws/a")
	ws := filepath.Join(base, "ws")
	p := plan([]string{ws}, nil, nil)
	p.Filesystem.WritableDevices = []string{"/dev/null"}
	s := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true, ReadsByMounts: true})
	if s.HandledFS&(ReadFile|ReadDir|Execute|Truncate) != 0 {
		t.Errorf("handles %s", s.HandledFS)
	}
	if s.HandledFS&(WriteFile|MakeReg|MakeChar|MakeBlock|Refer|IoctlDev) != WriteFile|MakeReg|MakeChar|MakeBlock|Refer|IoctlDev {
		t.Errorf("write side not handled: %s", s.HandledFS)
	}
	for _, r := range s.Rules {
		if r.Path == "/" {
			t.Errorf("a rule on /: %+v", r)
		}
	}
	if got := grants(s, filepath.Join(ws, "a")); got&WriteFile == 0 {
		t.Errorf("root grants %s", got)
	}
	// Without exact mode the option changes nothing.
	s2 := Compute(p, Options{ABI: 7, ReadsByMounts: true})
	if s2.HandledFS != fsRightsAt(7) {
		t.Errorf("Landlock-only mode dropped rights: %s", s2.HandledFS)
	}
}

func TestNetAndScopeNames(t *testing.T) {
	if got := strings.Join(NetNames(netBindTCP|netConnectTCP), ","); got != "bind_tcp,connect_tcp" {
		t.Errorf("NetNames: %s", got)
	}
	if got := strings.Join(NetNames(netConnectTCP), ","); got != "connect_tcp" {
		t.Errorf("NetNames(connect): %s", got)
	}
	if got := strings.Join(ScopeNames(scopeSignal), ","); got != "signal" {
		t.Errorf("ScopeNames: %s", got)
	}
	if NetNames(0) != nil || ScopeNames(0) != nil {
		t.Errorf("names for nothing")
	}
}

// TestExactModeKeepsLateSecretsUnreadable: a read-denied path that does not
// exist at start has no mount over it; Landlock handles reads (even with
// ReadsByMounts) and grants the existing entries above it one by one, so
// the name is unreadable if it appears during the run, and its directory
// can still be listed.
func TestExactModeKeepsLateSecretsUnreadable(t *testing.T) {
	base := tree(t, "home/.ssh/id_rsa", "home/docs/notes", "home/.bashrc", "ws/a")
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	netrc, aws := filepath.Join(home, ".netrc"), filepath.Join(home, ".aws", "credentials")
	p := plan([]string{ws}, []string{filepath.Join(home, ".ssh"), netrc, aws}, nil)
	for _, byMounts := range []bool{false, true} {
		s := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true, ReadsByMounts: byMounts, LateReadDenied: []string{netrc, aws}})
		if s.HandledFS&(ReadFile|ReadDir|Execute) != ReadFile|ReadDir|Execute {
			t.Fatalf("reads not handled (by mounts %v): %s", byMounts, s.HandledFS)
		}
		for _, late := range []string{netrc, aws, filepath.Join(home, ".aws"), filepath.Join(home, "new-file")} {
			if got := grants(s, late); got&(ReadFile|Execute) != 0 {
				t.Errorf("%s, created later, would be readable: %s", late, got)
			}
		}
		for _, ok := range []string{filepath.Join(home, "docs", "notes"), filepath.Join(home, ".bashrc"), filepath.Join(home, ".ssh", "id_rsa"), "/usr/bin/true", filepath.Join(ws, "a")} {
			if got := grants(s, ok); got&(ReadFile|Execute) != ReadFile|Execute {
				t.Errorf("%s not readable: %s", ok, got)
			}
		}
		if got := grants(s, home); got&ReadDir == 0 {
			t.Errorf("the split home cannot be listed: %s", got)
		}
		narrowed := false
		for _, n := range s.Narrowed {
			if n.Dir == home && strings.Contains(n.Effect, "created in it after the start cannot be read") {
				narrowed = true
			}
		}
		if !narrowed {
			t.Errorf("home not reported as narrowed: %+v", s.Narrowed)
		}
	}
	// Nothing missing: exact mode by mounts handles no reads, as before.
	s := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true, ReadsByMounts: true})
	if s.HandledFS&(ReadFile|ReadDir) != 0 || len(s.Narrowed) != 0 {
		t.Errorf("reads handled without late paths: %s %+v", s.HandledFS, s.Narrowed)
	}
}

// TestExactModeKeepsMaskedFilesNamesUnreadable: a masked file (every denied
// path exists, nothing late) may be replaced on the host during the run, a
// new directory entry its mask does not cover: Landlock handles reads and
// grants its directory's other entries one by one, never its name.
func TestExactModeKeepsMaskedFilesNamesUnreadable(t *testing.T) {
	base := tree(t, "home/token.txt", "home/docs/notes", "ws/a")
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	token := filepath.Join(home, "token.txt")
	p := plan([]string{ws}, []string{token}, nil)
	s := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true, ReadsByMounts: true, MaskedFiles: []string{token}})
	if s.HandledFS&(ReadFile|ReadDir|Execute) != ReadFile|ReadDir|Execute {
		t.Fatalf("reads not handled: %s", s.HandledFS)
	}
	if got := grants(s, token); got&(ReadFile|Execute) != 0 {
		t.Errorf("%s, replaced during the run, would be readable: %s", token, got)
	}
	for _, ok := range []string{filepath.Join(home, "docs", "notes"), filepath.Join(ws, "a"), "/usr/bin/true"} {
		if got := grants(s, ok); got&(ReadFile|Execute) != ReadFile|Execute {
			t.Errorf("%s not readable: %s", ok, got)
		}
	}
}

// TestResolveUnixGrantedWhereWritable: on ABI 9, pathname unix sockets are
// reachable exactly where writing is granted.
func TestResolveUnixGrantedWhereWritable(t *testing.T) {
	base := tree(t, "ws/.git/config", "ws/src/a", "home/x")
	ws := filepath.Join(base, "ws")
	p := plan([]string{ws}, nil, []string{filepath.Join(ws, ".git")})
	s := Compute(p, Options{ABI: 9, ResolveUnix: true})
	if s.HandledFS&ResolveUnx == 0 {
		t.Fatalf("resolve_unix not handled: %s", s.HandledFS)
	}
	if grants(s, filepath.Join(ws, "src", "s.sock"))&ResolveUnx == 0 {
		t.Errorf("a socket in the root cannot be reached")
	}
	for _, p := range []string{filepath.Join(ws, ".git", "s.sock"), filepath.Join(base, "home", "s.sock"), "/run/docker.sock"} {
		if grants(s, p)&ResolveUnx != 0 {
			t.Errorf("%s reachable", p)
		}
	}
	if s := Compute(p, Options{ABI: 7, ResolveUnix: true}); s.HandledFS&ResolveUnx != 0 {
		t.Errorf("ABI 7 handles resolve_unix")
	}
}

// TestDirRulesWithinASplitRoot: the private /dev and /proc get again the
// access an entries rule gives them on the host, both from one split /.
func TestDirRulesWithinASplitRoot(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	s := Compute(plan(nil, []string{filepath.Join(home, ".ssh")}, nil), Options{ABI: 7})
	got := map[string]AccessFS{}
	for _, r := range s.DirRulesWithin([]string{"/dev", "/proc"}) {
		got[r.Path] |= r.Access
	}
	for _, d := range []string{"/dev", "/proc"} {
		if got[d]&(ReadFile|ReadDir) != ReadFile|ReadDir {
			t.Errorf("%s: %s again on the new mount, want reading: %v", d, got[d], got)
		}
	}
}

func (a AccessFS) String() string { return strings.Join(a.Names(), ",") }
