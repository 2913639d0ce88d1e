package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// confinedBases are the trees the shared-directory check looks at while
// confineSharedDirs is in force.
var confinedBases []string

// confineSharedDirs makes the shared-directory check see only directories
// at or beneath base (and the other confined trees): every test tree lies
// beneath the world-writable /tmp, which would otherwise refuse each link
// in it. A test makes its own "/tmp" with chmod 1777.
func confineSharedDirs(t *testing.T, base string) {
	t.Helper()
	prevBases, prevKind := confinedBases, sharedDirKind
	confinedBases = append(append([]string(nil), confinedBases...), base)
	sharedDirKind = func(d string) string {
		for _, b := range confinedBases {
			if Within(d, b) {
				return modeSharedDirKind(d)
			}
		}
		return ""
	}
	t.Cleanup(func() { confinedBases, sharedDirKind = prevBases, prevKind })
}

// unconfinedSharedDirs restores the real check for the rest of the test.
func unconfinedSharedDirs(t *testing.T) {
	t.Helper()
	prevBases, prevKind := confinedBases, sharedDirKind
	confinedBases, sharedDirKind = nil, modeSharedDirKind
	t.Cleanup(func() { confinedBases, sharedDirKind = prevBases, prevKind })
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func TestWalkPathRecordsLinks(t *testing.T) {
	d := realDir(t)
	mkdirs(t, d+"/a/b", d+"/target")
	writeFile(t, d+"/file", "x")
	symlink(t, d+"/a/b", d+"/lnk")
	symlink(t, "lnk", d+"/chain")
	symlink(t, d+"/target", d+"/a/b/up")
	for _, tt := range []struct {
		in    string
		path  string
		links []string
	}{
		{d + "/a/b", d + "/a/b", nil},
		{d + "/chain", d + "/a/b", []string{d + "/chain", d + "/lnk"}},
		{d + "/chain/up/..", d, []string{d + "/chain", d + "/lnk", d + "/a/b/up"}},
		// The link inside the target is recorded where it really lies.
		{d + "/lnk/up", d + "/target", []string{d + "/lnk", d + "/a/b/up"}},
	} {
		got, links, err := resolveExisting(tt.in)
		if err != nil || got != tt.path || !reflect.DeepEqual(links, tt.links) {
			t.Errorf("resolveExisting(%q) = %q %q %v; want %q %q", tt.in, got, links, err, tt.path, tt.links)
		}
		if want, err := filepath.EvalSymlinks(tt.in); err != nil || want != got {
			t.Errorf("%q: EvalSymlinks says %q %v, resolveExisting %q", tt.in, want, err, got)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{d + "/missing", d + "/missing: no such file or directory"},
		{d + "/file/..", d + "/file/..: not a directory"}, // the kernel's answer, not EvalSymlinks'
		{d + "/file/x", d + "/file/x: not a directory"},
		{d + "/lnk/nope/..", d + "/lnk/nope/..: no such file or directory"},
	} {
		if _, _, err := resolveExisting(tt.in); err == nil || err.Error() != tt.want {
			t.Errorf("resolveExisting(%q): %v, want %q", tt.in, err, tt.want)
		}
	}
}

// TestPlantedLinksRefused: a writable root or the cwd whose path passes
// through a symlink inside a writable root of the same policy, or beneath a
// world-writable or sticky directory, is refused, naming the link; the
// attacker's variants each.
func TestPlantedLinksRefused(t *testing.T) {
	const inRoot = " is a symbolic link inside the writable root "
	const planted = ", which a sandboxed program could have planted; refusing to follow it"
	type tc struct {
		name  string
		setup func(t *testing.T, e testEnv)
		roots []string // "WS" and "D" are replaced
		cwd   string
		want  string
	}
	for _, tt := range []tc{
		{name: "the issue's cwd: ln -s ~ WS/project",
			setup: func(t *testing.T, e testEnv) { symlink(t, e.home, e.ws+"/project") },
			roots: []string{"WS"}, cwd: "WS/project",
			want: "--sandbox-policy-cwd: WS/project" + inRoot + "WS" + planted},
		{name: "the issue's root: writable_roots WS/link, cwd WS",
			setup: func(t *testing.T, e testEnv) { symlink(t, e.home, e.ws+"/link") },
			roots: []string{"WS/link"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: WS/link" + inRoot + "WS" + planted},
		{name: "relative link",
			setup: func(t *testing.T, e testEnv) { symlink(t, "../home", e.ws+"/rel") },
			roots: []string{"WS", "WS/rel"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[1].root: WS/rel" + inRoot + "WS" + planted},
		{name: "chain: the first planted link is named",
			setup: func(t *testing.T, e testEnv) { symlink(t, "b", e.ws+"/a"); symlink(t, e.home, e.ws+"/b") },
			roots: []string{"WS/a"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: WS/a" + inRoot + "WS" + planted},
		{name: "chain: a trusted link into a planted one",
			setup: func(t *testing.T, e testEnv) {
				symlink(t, e.ws+"/inner", e.dir+"/alias")
				symlink(t, e.home, e.ws+"/inner")
			},
			roots: []string{"D/alias"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: WS/inner" + inRoot + "WS" + planted},
		{name: "a link in the middle",
			setup: func(t *testing.T, e testEnv) { mkdirs(t, e.home+"/sub"); symlink(t, e.home, e.ws+"/mid") },
			roots: []string{"WS/mid/sub"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: WS/mid" + inRoot + "WS" + planted},
		{name: ".. after a link",
			setup: func(t *testing.T, e testEnv) { mkdirs(t, e.home+"/deep"); symlink(t, e.home+"/deep", e.ws+"/l") },
			roots: []string{"WS/l/.."}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: WS/l" + inRoot + "WS" + planted},
		{name: "the link's real place counts, not the path given",
			setup: func(t *testing.T, e testEnv) { symlink(t, e.ws, e.dir+"/alias"); symlink(t, e.home, e.ws+"/l") },
			roots: []string{"D/alias/l"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: WS/l" + inRoot + "WS" + planted},
		{name: "a link back to the root itself",
			setup: func(t *testing.T, e testEnv) { symlink(t, ".", e.ws+"/self") },
			roots: []string{"WS", "WS/self"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[1].root: WS/self" + inRoot + "WS" + planted},
		{name: "a link in root A into root B",
			setup: func(t *testing.T, e testEnv) { mkdirs(t, e.dir+"/B/sub"); symlink(t, e.dir+"/B/sub", e.ws+"/l") },
			roots: []string{"WS", "D/B"}, cwd: "WS/l",
			want: "--sandbox-policy-cwd: WS/l" + inRoot + "WS" + planted},
		{name: "a root listed later holds the link",
			setup: func(t *testing.T, e testEnv) { mkdirs(t, e.dir+"/B"); symlink(t, e.home, e.dir+"/B/l") },
			roots: []string{"D/B/l", "D/B"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: D/B/l" + inRoot + "D/B" + planted},
		{name: "a link in /tmp into the workspace",
			setup: func(t *testing.T, e testEnv) {
				mkdirs(t, e.dir+"/tmp")
				chmod(t, e.dir+"/tmp", os.ModeSticky|0o777)
				symlink(t, e.ws, e.dir+"/tmp/w")
			},
			roots: []string{"D/tmp/w"}, cwd: "D/tmp/w",
			want: "--sandbox-policy: writable_roots[0].root: D/tmp/w is a symbolic link in D/tmp, a world-writable directory, where another user or a sandboxed program could have planted it; refusing to follow it"},
		{name: "the cwd a link in /tmp",
			setup: func(t *testing.T, e testEnv) {
				mkdirs(t, e.dir+"/tmp")
				chmod(t, e.dir+"/tmp", os.ModeSticky|0o777)
				symlink(t, e.ws, e.dir+"/tmp/w")
			},
			roots: []string{}, cwd: "D/tmp/w",
			want: "--sandbox-policy-cwd: D/tmp/w is a symbolic link in D/tmp, a world-writable directory, where another user or a sandboxed program could have planted it; refusing to follow it"},
		{name: "deeper beneath /tmp",
			setup: func(t *testing.T, e testEnv) {
				mkdirs(t, e.dir+"/tmp/made/by/someone")
				chmod(t, e.dir+"/tmp", os.ModeSticky|0o777)
				symlink(t, e.home, e.dir+"/tmp/made/by/someone/l")
			},
			roots: []string{"D/tmp/made/by/someone/l"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: D/tmp/made/by/someone/l is a symbolic link beneath D/tmp, a world-writable directory, where another user or a sandboxed program could have planted it; refusing to follow it"},
		{name: "world-writable without the sticky bit",
			setup: func(t *testing.T, e testEnv) {
				mkdirs(t, e.dir+"/open")
				chmod(t, e.dir+"/open", 0o777)
				symlink(t, e.home, e.dir+"/open/l")
			},
			roots: []string{"D/open/l"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: D/open/l is a symbolic link in D/open, a world-writable directory, where another user or a sandboxed program could have planted it; refusing to follow it"},
		{name: "sticky only",
			setup: func(t *testing.T, e testEnv) {
				mkdirs(t, e.dir+"/sticky")
				chmod(t, e.dir+"/sticky", os.ModeSticky|0o755)
				symlink(t, e.home, e.dir+"/sticky/l")
			},
			roots: []string{"D/sticky/l"}, cwd: "WS",
			want: "--sandbox-policy: writable_roots[0].root: D/sticky/l is a symbolic link in D/sticky, a sticky directory, where another user or a sandboxed program could have planted it; refusing to follow it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			tt.setup(t, e)
			sub := func(s string) string {
				s = strings.ReplaceAll(s, "WS", e.ws)
				return strings.ReplaceAll(s, "D/", e.dir+"/")
			}
			roots := make([]string, len(tt.roots))
			for i, r := range tt.roots {
				roots[i] = sub(r)
			}
			in := e.input(wsPolicy(roots...))
			in.PolicyCwd = sub(tt.cwd)
			if got, want := resolveError(t, in), sub(tt.want); got != want {
				t.Errorf("\n got %s\nwant %s", got, want)
			}
			// The same cwd for read_only makes nothing writable: allowed.
			ro := e.input(SandboxPolicy{Kind: KindReadOnly})
			ro.PolicyCwd = sub(tt.cwd)
			mustResolve(t, ro)
		})
	}
}

// TestTrustedLinksStillResolve: links the program could not have made
// resolve as before, and the Plan shows the canonical paths.
func TestTrustedLinksStillResolve(t *testing.T) {
	e := newTestEnv(t)
	data := filepath.Join(e.dir, "data", "code")
	mkdirs(t, data+"/proj")
	symlink(t, filepath.Join(e.dir, "data", "code"), e.home+"/code") // ~/code -> /data/code
	in := e.input(wsPolicy(e.home + "/code/proj"))
	in.PolicyCwd = e.home + "/code/proj"
	plan := mustResolve(t, in)
	want := []WritablePath{{Path: data + "/proj", Source: "writable_roots[0]", Given: e.home + "/code/proj"}}
	if !reflect.DeepEqual(plan.Filesystem.WritableRoots, want) || plan.PolicyCwd != data+"/proj" {
		t.Fatalf("roots %+v cwd %q", plan.Filesystem.WritableRoots, plan.PolicyCwd)
	}

	t.Run("a link inside a denied path is not a grant", func(t *testing.T) {
		e := newTestEnv(t)
		symlink(t, e.home+"/.ssh", e.ws+"/keys")
		mkdirs(t, e.home+"/.ssh")
		pol := wsPolicy(e.ws)
		pol.SensitivePaths = &[]SensitivePath{{Path: "~/.ssh", BlockRead: true, BlockWrite: true}}
		plan := mustResolve(t, e.input(pol))
		if plan.Filesystem.ReadDenied[0].Path != e.home+"/.ssh" {
			t.Fatalf("read denied %+v", plan.Filesystem.ReadDenied)
		}
	})
	t.Run("a root through a trusted link to a denied path stays denied", func(t *testing.T) {
		e := newTestEnv(t)
		mkdirs(t, e.home+"/.ssh")
		symlink(t, e.home+"/.ssh", e.dir+"/proj")
		pol := wsPolicy(e.dir + "/proj")
		pol.SensitivePaths = &[]SensitivePath{{Path: "~/.ssh", BlockRead: true, BlockWrite: true}}
		plan := mustResolve(t, e.input(pol))
		if plan.Filesystem.WritableRoots[0].Path != e.home+"/.ssh" {
			t.Fatalf("roots %+v", plan.Filesystem.WritableRoots)
		}
		for _, l := range [][]DeniedPath{plan.Filesystem.ReadDenied, plan.Filesystem.WriteDenied} {
			if len(l) == 0 || l[0].Path != e.home+"/.ssh" {
				t.Fatalf("denied %+v", l)
			}
		}
	})
}

// TestSystemLinksResolve: with the real shared-directory check, the
// system's own links (/var/run, a usrmerge /bin) still resolve, and a link
// in the test's temp dir (beneath the world-writable /tmp) is refused.
func TestSystemLinksResolve(t *testing.T) {
	e := newTestEnv(t)
	unconfinedSharedDirs(t)
	for _, link := range []string{"/var/run", "/bin", "/lib"} {
		fi, err := os.Lstat(link)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		want, err := filepath.EvalSymlinks(link)
		if err != nil {
			t.Fatal(err)
		}
		plan := mustResolve(t, e.input(wsPolicy(link)))
		if got := plan.Filesystem.WritableRoots[0]; got.Path != want || got.Given != link {
			t.Errorf("%s: %+v, want %s", link, got, want)
		}
	}
	var shared string
	for d := e.dir; d != "/"; d = filepath.Dir(d) {
		if modeSharedDirKind(filepath.Dir(d)) != "" {
			shared = filepath.Dir(d)
			break
		}
	}
	if shared == "" {
		t.Skip("the temp dir lies beneath no world-writable directory")
	}
	symlink(t, e.ws, e.dir+"/alias")
	got := resolveError(t, e.input(wsPolicy(e.dir+"/alias")))
	if want := "--sandbox-policy: writable_roots[0].root: " + e.dir + "/alias is a symbolic link beneath " + shared + ", a world-writable directory"; !strings.HasPrefix(got, want) {
		t.Errorf("\n got %s\nwant %s...", got, want)
	}
}

func TestSharedDirKind(t *testing.T) {
	d := realDir(t)
	for _, tt := range []struct {
		mode os.FileMode
		want string
	}{
		{0o755, ""}, {0o700, ""}, {0o775, ""}, {0o777, "a world-writable directory"},
		{os.ModeSticky | 0o777, "a world-writable directory"}, {os.ModeSticky | 0o755, "a sticky directory"},
	} {
		p := filepath.Join(d, strings.ReplaceAll(tt.mode.String(), "-", "_"))
		mkdirs(t, p)
		chmod(t, p, tt.mode)
		if got := modeSharedDirKind(p); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.mode, got, tt.want)
		}
	}
	if got := modeSharedDirKind(d + "/missing"); !strings.Contains(got, "could not be examined") {
		t.Errorf("missing: %q", got)
	}
}
