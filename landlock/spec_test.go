package landlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
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
// on it and on its ancestors), as Landlock computes it.
func grants(s *Spec, path string) AccessFS {
	var a AccessFS
	for _, r := range s.Rules {
		if r.Path == path || policy.Beneath(path, r.Path) {
			a |= r.Access
		}
	}
	return a
}

func TestLandlockOnlySplitsAlongDeniedPaths(t *testing.T) {
	base := tree(t, "home/.ssh/id_rsa", "home/docs/notes", "home/.bashrc", "ws/.git/config", "ws/src/main.c", "ws/README")
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	p := plan([]string{ws}, []string{filepath.Join(home, ".ssh")}, []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".codex")})
	s, err := Compute(p, Options{ABI: 7})
	if err != nil {
		t.Fatal(err)
	}
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

// TestSplitRulesCarryTheirListedType: the rules of a split directory's
// entries carry the type its listing gave (which the runner takes instead
// of a stat); rules on paths nobody listed (the roots) carry none, and a
// symbolic link gets no rule at all.
func TestSplitRulesCarryTheirListedType(t *testing.T) {
	base := tree(t, "home/.ssh/id_rsa", "home/docs/notes", "home/.bashrc", "ws/README")
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	if err := os.Symlink("docs", filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	s, err := Compute(plan([]string{ws}, []string{filepath.Join(home, ".ssh")}, nil), Options{ABI: 7})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Rule{}
	for _, r := range s.Rules {
		got[r.Path] = r
	}
	for path, want := range map[string]Listed{
		filepath.Join(home, "docs"):    ListedDir,
		filepath.Join(home, ".bashrc"): ListedFile,
	} {
		r, ok := got[path]
		if !ok {
			t.Errorf("%s: no rule", path)
			continue
		}
		if r.Listed != want {
			t.Errorf("%s: listed %d, want %d", path, r.Listed, want)
		}
		if r.Required {
			t.Errorf("%s: an enumerated entry is required", path)
		}
	}
	roots := 0
	for _, r := range s.Rules {
		if r.Required {
			roots++
			if r.Listed != 0 {
				t.Errorf("%s: a root (required) carries listed type %d", r.Path, r.Listed)
			}
		}
	}
	if roots == 0 {
		t.Errorf("no required rule (the writable root): %+v", s.Rules)
	}
	if r, ok := got[filepath.Join(home, "link")]; ok {
		t.Errorf("a rule on a symbolic link: %+v", r)
	}
}

func TestExactModeGrantsWholeSubtrees(t *testing.T) {
	base := tree(t, "home/.ssh/id_rsa", "ws/.git/config")
	ws := filepath.Join(base, "ws")
	p := plan([]string{ws}, []string{filepath.Join(base, "home", ".ssh")}, []string{filepath.Join(ws, ".git")})
	s, err := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true})
	if err != nil {
		t.Fatal(err)
	}
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
		s, err := Compute(p, c.opt)
		if err != nil {
			t.Fatal(err)
		}
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
		s, err := Compute(p, Options{ABI: c.abi})
		if err != nil {
			t.Fatal(err)
		}
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

// TestBuildOnThisKernel builds a real ruleset (no enforcement: the test
// process is never restricted).
func TestBuildOnThisKernel(t *testing.T) {
	abi := ABI()
	if abi < 1 {
		testcap.Skipf(t, testcap.Landlock, "no Landlock on this kernel")
	}
	base := tree(t, "ws/a", "home/.ssh/k", "home/f")
	p := plan([]string{filepath.Join(base, "ws")}, []string{filepath.Join(base, "home", ".ssh")}, nil)
	p.Filesystem.WritableDevices = []string{"/dev/null", "/dev/does-not-exist"}
	s, err := Compute(p, Options{ABI: abi})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	if fd < 0 {
		t.Fatal("no ruleset fd")
	}
	os.NewFile(uintptr(fd), "ruleset").Close()
	// A rule asking for more than an older ABI handles is cut down to it,
	// not refused (ReadWrite holds truncate, which ABI 2 does not know).
	if abi >= 2 {
		old, err := Compute(p, Options{ABI: 2})
		if err != nil {
			t.Fatal(err)
		}
		old = old.WithRule(Rule{Path: filepath.Join(base, "ws"), Access: ReadWrite, Required: true})
		fd, err := old.Build()
		if err != nil {
			t.Fatalf("ABI 2 ruleset with a ReadWrite rule: %v", err)
		}
		os.NewFile(uintptr(fd), "ruleset").Close()
	}
	// A required rule on a vanished path is an error.
	s.Rules = append(s.Rules, Rule{Path: filepath.Join(base, "gone"), Access: writeRights, Required: true})
	if _, err := s.Build(); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("missing required path: err %v", err)
	}
	// A symlink on the way to a rule's path, made after the Plan (whose
	// paths are canonical), is never followed: a required rule fails, an
	// enumerated one is skipped.
	if err := os.Rename(filepath.Join(base, "ws"), filepath.Join(base, "ws.real")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "home"), filepath.Join(base, "ws")); err != nil {
		t.Fatal(err)
	}
	swapped := &Spec{ABI: s.ABI, HandledFS: s.HandledFS, Rules: []Rule{{Path: filepath.Join(base, "ws", "f"), Access: writeRights & s.HandledFS}}}
	if fd, err := swapped.Build(); err != nil {
		t.Errorf("an enumerated rule through a new symlink: %v", err)
	} else {
		os.NewFile(uintptr(fd), "ruleset").Close()
	}
	swapped.Rules[0].Required = true
	if _, err := swapped.Build(); err == nil || !strings.Contains(err.Error(), "a symbolic link appeared on the way") {
		t.Errorf("a required rule through a new symlink: err %v", err)
	}
	if fd, err := openNoSymlinks(filepath.Join(base, "ws")); err != nil {
		t.Errorf("the new symlink itself: %v", err)
	} else {
		unix.Close(fd)
	}
}

func TestReadsByMountsHandlesOnlyWrites(t *testing.T) {
	base := tree(t, "ws/a")
	ws := filepath.Join(base, "ws")
	p := plan([]string{ws}, nil, nil)
	p.Filesystem.WritableDevices = []string{"/dev/null"}
	s, err := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true, ReadsByMounts: true})
	if err != nil {
		t.Fatal(err)
	}
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
	s2, _ := Compute(p, Options{ABI: 7, ReadsByMounts: true})
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
		s, err := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true, ReadsByMounts: byMounts, LateReadDenied: []string{netrc, aws}})
		if err != nil {
			t.Fatal(err)
		}
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
	s, _ := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true, ReadsByMounts: true})
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
	s, err := Compute(p, Options{ABI: 7, Exact: true, ReadOnlyOutsideRoots: true, ReadsByMounts: true, MaskedFiles: []string{token}})
	if err != nil {
		t.Fatal(err)
	}
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
	s, err := Compute(p, Options{ABI: 9, ResolveUnix: true})
	if err != nil {
		t.Fatal(err)
	}
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
	if s, _ := Compute(p, Options{ABI: 7, ResolveUnix: true}); s.HandledFS&ResolveUnx != 0 {
		t.Errorf("ABI 7 handles resolve_unix")
	}
}
