package mountns

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
	"sandbox-executable/spawn"
)

func mk(t *testing.T, base string, names ...string) {
	t.Helper()
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
}

// describe renders ops as "kind target" lines for comparison.
func describe(ops []spawn.Op) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o.Why())
	}
	return out
}

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func TestBuildOrdersOperations(t *testing.T) {
	base := t.TempDir()
	mk(t, base, "home/.ssh/id_rsa", "home/.netrc", "ws/.git/config", "ws/src/", "ws/sub/")
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	p := &policy.Plan{}
	p.Filesystem.WritableRoots = []policy.WritablePath{{Path: filepath.Join(ws, "sub")}, {Path: ws}}
	p.Filesystem.ReadDenied = []policy.DeniedPath{
		{Path: filepath.Join(home, ".ssh")}, {Path: filepath.Join(home, ".netrc")},
		{Path: filepath.Join(home, ".aws")},           // missing, outside roots: nothing to do
		{Path: filepath.Join(ws, "secrets", "token")}, // missing inside a root: placeholder at ws/secrets
	}
	p.Filesystem.WriteDenied = []policy.DeniedPath{
		{Path: filepath.Join(ws, ".git")}, {Path: filepath.Join(ws, ".codex")}, {Path: filepath.Join(home, ".ssh")},
		{Path: "/etc/passwd"}, // outside every root: read-only already
	}
	v, err := Build(p, Options{Privileged: true, Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	if v.NamespaceFlags != unix.CLONE_NEWNS {
		t.Errorf("privileged flags %x", v.NamespaceFlags)
	}
	d := describe(v.Ops)
	order := []string{
		"make / private",
		"clone writable root " + ws,
		"make everything read-only",
		"writable root " + ws,
		"writable root " + filepath.Join(ws, "sub"),
		"mask " + filepath.Join(home, ".ssh"),
		"mask " + filepath.Join(home, ".netrc"),
		"mask " + filepath.Join(ws, "secrets"),
		"bind " + filepath.Join(ws, ".git"),
		"bind " + filepath.Join(ws, ".codex"),
		"re-enter working directory " + ws,
	}
	last := -1
	for _, s := range order {
		i := index(d, s)
		if i < 0 || i < last {
			t.Fatalf("op %q missing or out of order in\n%s", s, strings.Join(d, "\n"))
		}
		last = i
	}
	if d[len(d)-1] != "re-enter working directory "+ws {
		t.Errorf("the working directory must be re-entered last: %s", d[len(d)-1])
	}
	for _, s := range d {
		if strings.Contains(s, ".aws") || strings.Contains(s, "/etc/passwd") {
			t.Errorf("needless op %q", s)
		}
	}
	if strings.Join(v.Placeholders, " ") != filepath.Join(ws, "secrets")+" "+filepath.Join(ws, ".codex") {
		t.Errorf("placeholders %v", v.Placeholders)
	}
	if len(v.Narrowed) != 1 || v.Narrowed[0].Path != filepath.Join(ws, "secrets") {
		t.Errorf("narrowed %+v", v.Narrowed)
	}
	// A file is masked with a nodev bind of /dev/null, a directory with an
	// empty read-only tmpfs.
	for _, o := range v.Ops {
		netrc, ssh := filepath.Join(home, ".netrc"), filepath.Join(home, ".ssh")
		if want := fmt.Sprintf("mount(%q, %q, \"\", MS_BIND, \"\")", "/dev/null", netrc); o.Why() == "mask "+netrc && o.String() != want {
			t.Errorf("file mask %s, want %s", o, want)
		}
		if want := fmt.Sprintf("mount(\"tmpfs\", %q, \"tmpfs\", MS_RDONLY|MS_NOSUID|MS_NODEV|MS_NOEXEC, \"mode=000,size=4k,nr_inodes=1\")", ssh); o.Why() == "mask "+ssh && o.String() != want {
			t.Errorf("dir mask %s, want %s", o, want)
		}
	}
}

// TestPrivateTmpAndListener: the view is decided whole before the run: the
// private temp dir (made by the run, so not there yet) gets a bounded tmpfs
// of the user's own, and the proxy's listener is made in the namespace.
func TestPrivateTmpAndListener(t *testing.T) {
	base := t.TempDir()
	mk(t, base, "home/.ssh/id_rsa", "ws/.git/config")
	ws, tmp := filepath.Join(base, "ws"), filepath.Join(base, "tmp-made-by-the-run")
	p := &policy.Plan{}
	p.Filesystem.WritableRoots = []policy.WritablePath{{Path: ws}}
	p.Filesystem.ReadDenied = []policy.DeniedPath{{Path: filepath.Join(base, "home", ".ssh")}}
	p.Filesystem.WriteDenied = []policy.DeniedPath{{Path: filepath.Join(ws, ".git")}, {Path: filepath.Join(ws, ".codex")}}
	o := Options{UID: 1000, GID: 1000, Cwd: ws, Network: true, PrivateTmpBytes: 1 << 20, PrivateTmp: tmp, Proxy: &ProxyListener{Port: 3128}}
	got, err := Build(p, o)
	if err != nil {
		t.Fatal(err)
	}
	d := describe(got.Ops)
	i := index(d, "private temp dir "+tmp)
	if i < 0 || index(d, "listen for the proxy on 127.0.0.1") < 0 {
		t.Fatalf("temp dir or listener missing:\n%s", strings.Join(d, "\n"))
	}
	// A bounded tmpfs of the user's own, mounted after the read-only
	// remount and the roots (so on top of both), before the masks.
	if m, want := got.Ops[i].String(), fmt.Sprintf("mount(\"tmpfs\", %q, \"tmpfs\", MS_NOSUID|MS_NODEV, \"size=1048576,mode=0700,uid=1000,gid=1000\")", tmp); m != want {
		t.Errorf("temp dir mount %s, want %s", m, want)
	}
	if i < index(d, "make everything read-only") || i < index(d, "writable root "+ws) || i > index(d, "mask "+filepath.Join(base, "home", ".ssh")) {
		t.Errorf("temp dir mounted out of order:\n%s", strings.Join(d, "\n"))
	}
	if index(d, "writable root "+tmp) >= 0 {
		t.Errorf("the temp dir is cloned from the host instead of a tmpfs")
	}
	if l := got.Ops[index(d, "listen for the proxy on 127.0.0.1")].String(); l != "listen(127.0.0.1:3128) and send it over the proxy socket" {
		t.Errorf("listener %s", l)
	}
}

func TestBuildUnprivilegedMapsItself(t *testing.T) {
	v, err := Build(&policy.Plan{}, Options{UID: 1000, GID: 1001})
	if err != nil {
		t.Fatal(err)
	}
	if v.NamespaceFlags != unix.CLONE_NEWNS|unix.CLONE_NEWUSER {
		t.Errorf("flags %x", v.NamespaceFlags)
	}
	want := map[string]string{"/proc/self/setgroups": "deny", "/proc/self/uid_map": "1000 1000 1", "/proc/self/gid_map": "1001 1001 1"}
	for i, o := range v.Ops[:3] {
		if o.Kind() != spawn.OpWrite || o.String() != fmt.Sprintf("write(%q, %q)", o.Target(), want[o.Target()]) {
			t.Errorf("op %d %s", i, o)
		}
	}
	if v.Ops[0].Target() != "/proc/self/setgroups" {
		t.Errorf("setgroups must be denied before gid_map is written")
	}
}

func TestBuildMasksEachTargetOnce(t *testing.T) {
	base := t.TempDir()
	mk(t, base, "home/.ssh/", "home/.config/gh/")
	home := filepath.Join(base, "home")
	missing := filepath.Join(base, "nohome")
	p := &policy.Plan{}
	p.Filesystem.WritableRoots = []policy.WritablePath{{Path: base}}
	for _, d := range []string{home, filepath.Join(home, ".ssh"), filepath.Join(home, ".config", "gh"),
		filepath.Join(missing, ".ssh"), filepath.Join(missing, ".aws"), filepath.Join(missing, ".config", "gh")} {
		p.Filesystem.ReadDenied = append(p.Filesystem.ReadDenied, policy.DeniedPath{Path: d})
	}
	v, err := Build(p, Options{Privileged: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, o := range v.Ops {
		if strings.HasPrefix(o.Why(), "mask ") {
			seen[o.Target()]++
		}
	}
	if len(seen) != 2 || seen[home] != 1 || seen[missing] != 1 {
		t.Errorf("masks %v, want %s and %s once each", seen, home, missing)
	}
}

// Scratch caches: a staging tmpfs on the private temp dir, the layers in
// it, the overlay over each cache, then the temp dir's own tmpfs over the
// staging one (hiding the layers), all before the masks; userxattr without
// privilege; none without a private temp dir.
func TestScratchCachesOverlays(t *testing.T) {
	base := t.TempDir()
	mk(t, base, "home/.ssh/id_rsa", "home/.npm/", "ws/", "tmp/")
	ws, tmp, npm := filepath.Join(base, "ws"), filepath.Join(base, "tmp"), filepath.Join(base, "home", ".npm")
	p := &policy.Plan{}
	p.Filesystem.WritableRoots = []policy.WritablePath{{Path: ws}}
	p.Filesystem.ReadDenied = []policy.DeniedPath{{Path: filepath.Join(base, "home", ".ssh")}}
	for _, priv := range []bool{true, false} {
		o := Options{Privileged: priv, UID: 1000, GID: 1000, Cwd: ws, PrivateTmpBytes: 1 << 20, ScratchCaches: []string{npm}}
		v, err := Build(p, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.ScratchCaches) != 0 || index(describe(v.Ops), "scratch cache "+npm) >= 0 {
			t.Fatalf("scratch caches without a private temp dir: %v", v.ScratchCaches)
		}
		o.PrivateTmp = tmp
		v, err = Build(p, o)
		if err != nil {
			t.Fatal(err)
		}
		d := describe(v.Ops)
		stage, ov, priv2, mask := index(d, "scratch cache layers"), index(d, "scratch cache "+npm), index(d, "private temp dir "+tmp), index(d, "mask "+filepath.Join(base, "home", ".ssh"))
		if !(index(d, "make everything read-only") < stage && stage < ov && ov < priv2 && priv2 < mask) {
			t.Fatalf("out of order:\n%s", strings.Join(d, "\n"))
		}
		if m, w := v.Ops[stage].String(), fmt.Sprintf("mount(\"tmpfs\", %q, \"tmpfs\", MS_NOSUID|MS_NODEV, \"size=1048576,mode=0700,uid=1000,gid=1000\")", tmp); m != w {
			t.Errorf("staging tmpfs %s, want %s", m, w)
		}
		want := "lowerdir=fd(" + npm + "),upperdir=" + tmp + "/0/upper,workdir=" + tmp + "/0/work"
		if !priv {
			want += ",userxattr"
		}
		if m, w := v.Ops[ov].String(), fmt.Sprintf("mount(\"overlay\", %q, \"overlay\", MS_NOSUID|MS_NODEV, %q)", npm, want); m != w {
			t.Errorf("overlay %s, want %s", m, w)
		}
		if !slices.Equal(v.ScratchCaches, []string{npm}) {
			t.Errorf("View.ScratchCaches %v", v.ScratchCaches)
		}
	}
}

func TestKernelAtLeast(t *testing.T) {
	for _, c := range []struct {
		release string
		want    bool
	}{{"5.11.0", true}, {"5.10.200-x", false}, {"6.1.0-18-amd64", true}, {"4.19.0", false}, {"5.11", true}, {"5.1", false}, {"junk", false}, {"6.18.1+", true}} {
		if got := kernelAtLeast(c.release, 5, 11); got != c.want {
			t.Errorf("kernelAtLeast(%q, 5, 11) = %v", c.release, got)
		}
	}
}
