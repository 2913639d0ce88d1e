package integration

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandbox-executable/internal/testcap"
)

// Real builds in the built-in default (no --sandbox-policy): each tool
// reads a warm cache in a fake HOME, writes what it writes (into the
// throwaway overlay the default gives the caches), succeeds, and leaves the
// host's cache byte for byte as it was.

// cacheState describes a directory tree for an exact comparison: every
// entry's name, type, mode, size, modification time, link target and, for
// regular files, the SHA-256 of the contents.
func cacheState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := fmt.Sprintf("%s %v %d %d", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			line += " -> " + l
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatalf("hashing %s: %v", dir, err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// caches snapshots the cache directories under home.
type caches struct {
	dirs   []string
	before []string
}

func snapshotCaches(t *testing.T, dirs ...string) *caches {
	t.Helper()
	c := &caches{dirs: dirs}
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Fatalf("cache %s was not warmed: %v", d, err)
		}
		c.before = append(c.before, cacheState(t, d))
	}
	return c
}

// unchanged fails the test when a cache differs from its snapshot.
func (c *caches) unchanged(t *testing.T) {
	t.Helper()
	for i, d := range c.dirs {
		if after := cacheState(t, d); after != c.before[i] {
			t.Errorf("the host's cache %s changed during the run:\n%s", d, firstDiff(c.before[i], after))
		}
	}
}

// firstDiff shows the first lines in which two tree states differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	seen := map[string]bool{}
	for _, l := range al {
		seen[l] = true
	}
	var out []string
	for _, l := range bl {
		if !seen[l] && len(out) < 5 {
			out = append(out, "+ "+l)
		}
	}
	seen = map[string]bool{}
	for _, l := range bl {
		seen[l] = true
	}
	for _, l := range al {
		if !seen[l] && len(out) < 10 {
			out = append(out, "- "+l)
		}
	}
	return strings.Join(out, "\n")
}

// host runs a tool on the host (outside any sandbox), to warm a cache.
func host(t *testing.T, dir string, env []string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("warming the cache: %v: %v\n%s", argv, err, out)
	}
	return string(out)
}

// needTool returns the system-wide path of tool or skips the test.
// skipBuildsIfShort skips a real build under -short: the VM guests run the
// suite that way, where compiling under emulation takes minutes (the
// overlay itself is still tested there by the cheaper tests).
func skipBuildsIfShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a real build")
	}
}

func needTool(t *testing.T, tool string) string {
	t.Helper()
	p, ok := lookSystem(tool)
	if !ok {
		testcap.Skipf(t, testcap.Installed, "%s is not installed in %s", tool, systemPath)
	}
	return p
}

// buildEnv is the environment of a build run: the workspace's HOME, the
// system PATH, nothing of the test process's own tool configuration.
func buildEnv(w *workspace, extra ...string) []string {
	return append([]string{"HOME=" + w.home, "PATH=" + systemPath, "LANG=C"}, extra...)
}

// inDefault runs argv under the built-in default in w.root.
func inDefault(t *testing.T, w *workspace, env []string, argv ...string) result {
	t.Helper()
	// A real build from empty caches takes as long as the machine makes
	// it: the bound is the default's own wall-clock limit, for a hang.
	return run(t, runOpts{env: env, dir: w.root, timeout: 10 * time.Minute}, append([]string{"--"}, argv...)...)
}

// goProxy writes a GOPROXY file tree serving one module, example.com/dep
// v1.0.0, and returns its file:// URL.
func goProxy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	at := filepath.Join(dir, "example.com", "dep", "@v")
	mustMkdir(t, at)
	mod := "module example.com/dep\n\ngo 1.21\n"
	write(t, filepath.Join(at, "list"), "v1.0.0\n")
	write(t, filepath.Join(at, "v1.0.0.info"), `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`)
	write(t, filepath.Join(at, "v1.0.0.mod"), mod)
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for name, body := range map[string]string{
		"go.mod": mod,
		"dep.go": "package dep\n\n// Greeting is what the dependency says.\nfunc Greeting() string { return \"hello from dep\" }\n",
	} {
		f, err := z.Create("example.com/dep@v1.0.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, "v1.0.0.zip"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + dir
}

// writeGoModule makes w.root a module that imports example.com/dep, with a
// test, and warms the build and module caches under w.home on the host.
func writeGoModule(t *testing.T, w *workspace, goTool string) (gocache, modcache string) {
	t.Helper()
	gocache = filepath.Join(w.home, ".cache", "go-build")
	modcache = filepath.Join(w.home, "go", "pkg", "mod")
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+w", w.home).Run() })
	shared := sharedGoCaches(t, goTool)
	mustMkdir(t, filepath.Dir(gocache))
	host(t, w.home, nil, "cp", "-a", filepath.Join(shared, ".cache", "go-build"), filepath.Dir(gocache))
	host(t, w.home, nil, "cp", "-a", filepath.Join(shared, "go"), w.home)
	warmGoModule(t, w.root, buildEnv(w), goTool)
	return gocache, modcache
}

// sharedGoCaches is a home whose build and module caches hold what
// writeGoModule's module needs, warmed once per package run: a test starts
// from a copy, so that the host compiles only its own module's packages
// (the standard library from an empty cache took some 16 s each time).
func sharedGoCaches(t *testing.T, goTool string) string {
	t.Helper()
	goCaches.once.Do(func() {
		base := filepath.Join(toolDir, "go-caches")
		home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
		mustMkdir(t, home)
		mustMkdir(t, ws)
		warmGoModule(t, ws, []string{"HOME=" + home, "PATH=" + systemPath, "LANG=C"}, goTool)
		goCaches.home = home
	})
	if goCaches.home == "" {
		t.Fatal("the shared Go caches could not be warmed: see the first test that tried")
	}
	return goCaches.home
}

var goCaches struct {
	once sync.Once
	home string
}

// warmGoModule writes the module into dir and builds and tests it on the
// host with env, which warms the caches of env's HOME.
func warmGoModule(t *testing.T, dir string, env []string, goTool string) {
	t.Helper()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n")
	write(t, filepath.Join(dir, "main.go"), "package main\n\nimport \"example.com/dep\"\n\nfunc main() { println(dep.Greeting()) }\n")
	write(t, filepath.Join(dir, "main_test.go"), "package main\n\nimport (\n\t\"testing\"\n\n\t\"example.com/dep\"\n)\n\nfunc TestGreeting(t *testing.T) {\n\tif dep.Greeting() == \"\" {\n\t\tt.Fatal(\"empty\")\n\t}\n}\n")
	env = append(env, "GOPROXY="+goProxy(t), "GOSUMDB=off", "GOFLAGS=-modcacherw -buildvcs=false", "GOTOOLCHAIN=local")
	host(t, dir, env, goTool, "mod", "tidy")
	host(t, dir, env, goTool, "build", "./...")
	host(t, dir, env, goTool, "test", "./...")
}

// TestDefaultGoBuildWarmCache: go build and go test of a module with a
// dependency, in a workspace that is no git repository, work in the
// default with the caches warm, with GOFLAGS unset and with
// -buildvcs=auto; the host's build and module caches are unchanged.
func TestDefaultGoBuildWarmCache(t *testing.T) {
	skipBuildsIfShort(t)
	goTool := needTool(t, "go")
	for _, flags := range []string{"", "-buildvcs=auto"} {
		t.Run("GOFLAGS="+flags, func(t *testing.T) {
			w := newWorkspace(t)
			gocache, modcache := writeGoModule(t, w, goTool)
			// New code: the build must write new cache entries.
			write(t, filepath.Join(w.root, "more.go"), "package main\n\nfunc init() { println(\"more\") }\n")
			snap := snapshotCaches(t, gocache, modcache)
			env := buildEnv(w, "GOPROXY=off", "GOTOOLCHAIN=local")
			if flags != "" {
				env = append(env, "GOFLAGS="+flags)
			}
			r := inDefault(t, w, env, "sh", "-c", `go build -o app . && ./app && go test -count=1 ./... && touch "$(go env GOCACHE)/written-in-the-sandbox"`)
			if r.code != 0 || !strings.Contains(r.stderr, "hello from dep") || !strings.Contains(r.stdout, "ok") {
				t.Fatalf("go build and go test in the default: %v", r)
			}
			snap.unchanged(t)
			if _, err := os.Stat(filepath.Join(gocache, "written-in-the-sandbox")); err == nil {
				t.Error("a file written into the sandbox's build cache reached the host's")
			}
		})
	}
}

// npmPackage is a tiny package for the registry stand-in.
type npmPackage struct {
	tgz       []byte
	integrity string
}

func makeNpmPackage(t *testing.T) npmPackage {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name":"tinypkg","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports = 'hello from tinypkg';\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	sum := sha512.Sum512(buf.Bytes())
	return npmPackage{tgz: buf.Bytes(), integrity: "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}
}

// npmRegistry is a registry stand-in on 127.0.0.1 serving tinypkg 1.0.0.
type npmRegistry struct {
	url, port string
	hits      atomic.Int64
	pkg       npmPackage
}

func startNpmRegistry(t *testing.T) *npmRegistry {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &npmRegistry{pkg: makeNpmPackage(t)}
	r.url = "http://" + l.Addr().String() + "/"
	_, r.port, _ = net.SplitHostPort(l.Addr().String())
	tarball := r.url + "tinypkg/-/tinypkg-1.0.0.tgz"
	packument := fmt.Sprintf(`{"name":"tinypkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"tinypkg","version":"1.0.0","dist":{"tarball":%q,"integrity":%q}}}}`, tarball, r.pkg.integrity)
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		switch req.URL.Path {
		case "/tinypkg":
			rw.Header().Set("Content-Type", "application/json")
			rw.Write([]byte(packument))
		case "/tinypkg/-/tinypkg-1.0.0.tgz":
			rw.Header().Set("Content-Type", "application/octet-stream")
			rw.Write(r.pkg.tgz)
		default:
			http.NotFound(rw, req)
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return r
}

// writeNpmProject makes dir a project depending on tinypkg, locked to the
// registry stand-in, with a project .npmrc naming it.
func (r *npmRegistry) writeNpmProject(t *testing.T, dir string) {
	t.Helper()
	write(t, filepath.Join(dir, "package.json"), `{"name":"app","version":"1.0.0","private":true,"dependencies":{"tinypkg":"1.0.0"}}`)
	write(t, filepath.Join(dir, "package-lock.json"), fmt.Sprintf(`{"name":"app","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"app","version":"1.0.0","dependencies":{"tinypkg":"1.0.0"}},"node_modules/tinypkg":{"version":"1.0.0","resolved":%q,"integrity":%q}}}`,
		r.url+"tinypkg/-/tinypkg-1.0.0.tgz", r.pkg.integrity))
	write(t, filepath.Join(dir, ".npmrc"), "registry="+r.url+"\naudit=false\nfund=false\nupdate-notifier=false\n")
}

// TestDefaultNpmCiWarmCache: npm ci --offline installs from a warm ~/.npm
// in the default (which has no network), npm cache verify rewrites the
// cache's index (it failed with EROFS while ~/.npm was read-only), and the
// host's ~/.npm is unchanged.
func TestDefaultNpmCiWarmCache(t *testing.T) {
	skipBuildsIfShort(t)
	npm := needTool(t, "npm")
	reg := startNpmRegistry(t)
	w := newWorkspace(t)
	// Warm ~/.npm on the host from another copy of the project.
	warm := filepath.Join(filepath.Dir(w.root), "warm")
	mustMkdir(t, warm)
	reg.writeNpmProject(t, warm)
	host(t, warm, buildEnv(w), npm, "ci")
	reg.writeNpmProject(t, w.root)
	npmCache := filepath.Join(w.home, ".npm")
	snap := snapshotCaches(t, npmCache)
	hits := reg.hits.Load()
	r := inDefault(t, w, buildEnv(w), "sh", "-c", `npm ci --offline && node -e 'console.log(require("tinypkg"))' && npm cache verify`)
	if r.code != 0 || !strings.Contains(r.stdout, "hello from tinypkg") {
		t.Fatalf("npm ci --offline in the default: %v", r)
	}
	if n := reg.hits.Load() - hits; n != 0 {
		t.Errorf("the default reached the registry %d times", n)
	}
	snap.unchanged(t)
}

// writeWheel writes NAME-1.0-py3-none-any.whl, a package whose GREETING
// is "hello from NAME", into dir.
func writeWheel(t *testing.T, dir, name string) {
	t.Helper()
	info := name + "-1.0.dist-info/"
	files := []struct{ name, body string }{
		{name + "/__init__.py", "GREETING = 'hello from " + name + "'\n"},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: sandbox-executable-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := z.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString(info + "RECORD,,\n")
	w, err := z.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	mustMkdir(t, dir)
	if err := os.WriteFile(filepath.Join(dir, name+"-1.0-py3-none-any.whl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pipOK skips the test unless python3 has pip.
func pipOK(t *testing.T) string {
	t.Helper()
	py := needTool(t, "python3")
	if out, err := exec.Command(py, "-m", "pip", "--version").CombinedOutput(); err != nil {
		testcap.Skipf(t, testcap.Installed, "python3 has no pip: %v %s", err, out)
	}
	return py
}

// TestDefaultPipInstallWarmCache: pip installs a local wheel into ./deps
// in the default with ~/.cache/pip warm, and the cache is unchanged.
func TestDefaultPipInstallWarmCache(t *testing.T) {
	skipBuildsIfShort(t)
	py := pipOK(t)
	w := newWorkspace(t)
	writeWheel(t, filepath.Join(w.root, "wheels"), "tinywheel")
	env := buildEnv(w, "PIP_DISABLE_PIP_VERSION_CHECK=1")
	warm := filepath.Join(filepath.Dir(w.root), "warm")
	host(t, w.root, env, py, "-m", "pip", "install", "--no-index", "--find-links", "./wheels", "--target", warm, "tinywheel")
	pipCache := filepath.Join(w.home, ".cache", "pip")
	mustMkdir(t, pipCache) // pip may not have needed it for a local wheel
	snap := snapshotCaches(t, pipCache)
	r := inDefault(t, w, env, "sh", "-c", `python3 -m pip install --no-index --find-links ./wheels --target ./deps tinywheel && PYTHONPATH=./deps python3 -c 'import tinywheel; print(tinywheel.GREETING)' && touch ~/.cache/pip/written-in-the-sandbox`)
	if r.code != 0 || !strings.Contains(r.stdout, "hello from tinywheel") {
		t.Fatalf("pip install in the default: %v", r)
	}
	snap.unchanged(t)
}

// writeCrate makes dir a crate without dependencies.
func writeCrate(t *testing.T, dir string) {
	t.Helper()
	write(t, filepath.Join(dir, "Cargo.toml"), "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n")
	mustMkdir(t, filepath.Join(dir, "src"))
	write(t, filepath.Join(dir, "src", "main.rs"), "fn main() {\n    println!(\"hello from cargo\");\n}\n")
}

// TestDefaultCargoBuildOffline: cargo build --offline of a crate without
// dependencies works in the default, and ~/.cargo/registry is unchanged.
func TestDefaultCargoBuildOffline(t *testing.T) {
	skipBuildsIfShort(t)
	cargo := needTool(t, "cargo")
	w := newWorkspace(t)
	writeCrate(t, w.root)
	warm := filepath.Join(filepath.Dir(w.root), "warm")
	mustMkdir(t, warm)
	writeCrate(t, warm)
	host(t, warm, buildEnv(w), cargo, "build", "--offline")
	registry := filepath.Join(w.home, ".cargo", "registry")
	mustMkdir(t, registry)
	write(t, filepath.Join(registry, "warm"), "a warm registry cache\n")
	snap := snapshotCaches(t, registry)
	r := inDefault(t, w, buildEnv(w), "sh", "-c", `cargo build --offline && ./target/debug/hello && touch ~/.cargo/registry/written-in-the-sandbox`)
	if r.code != 0 || !strings.Contains(r.stdout, "hello from cargo") {
		t.Fatalf("cargo build --offline in the default: %v", r)
	}
	snap.unchanged(t)
}

// TestDefaultGoBuildUnprivileged: the same go build and go test as
// nobody (an unprivileged user namespace: the overlay needs userxattr),
// with --allow-degraded because nobody has no cgroup of its own here.
func TestDefaultGoBuildUnprivileged(t *testing.T) {
	skipBuildsIfShort(t)
	isoNeedRoot(t)
	goTool := needTool(t, "go")
	w := newWorkspace(t)
	gocache, modcache := writeGoModule(t, w, goTool)
	write(t, filepath.Join(w.root, "more.go"), "package main\n\nfunc init() { println(\"more\") }\n")
	for _, p := range []string{w.root, w.home} {
		if err := exec.Command("chown", "-R", "65534:65534", p).Run(); err != nil {
			t.Fatal(err)
		}
	}
	snap := snapshotCaches(t, gocache, modcache)
	env := buildEnv(w, "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=auto")
	r := run(t, runOpts{env: env, dir: w.root, cred: isoNobody.cred}, "--allow-degraded", "--", "sh", "-c",
		`go build -o app . && ./app && go test -count=1 ./... && touch "$(go env GOCACHE)/written-in-the-sandbox"`)
	if r.code != 0 || !strings.Contains(r.stderr, "hello from dep") || !strings.Contains(r.stdout, "ok") {
		t.Fatalf("go build and go test as nobody in the default: %v", r)
	}
	snap.unchanged(t)
}

// TestScratchCacheLayersHidden: the program writes into a scratch cache,
// sees its own write there, and sees none of the overlay's layers: its
// TMPDIR is empty; the host's cache is unchanged.
func TestScratchCacheLayersHidden(t *testing.T) {
	w := newWorkspace(t)
	npmCache := filepath.Join(w.home, ".npm")
	mustMkdir(t, npmCache)
	write(t, filepath.Join(npmCache, "warm"), "warm\n")
	snap := snapshotCaches(t, npmCache)
	r := inDefault(t, w, buildEnv(w), "sh", "-c", `cat ~/.npm/warm && echo changed > ~/.npm/warm && rm -f ~/.npm/warm && echo new > ~/.npm/new && cat ~/.npm/new && ls -A "$TMPDIR" | wc -l`)
	if r.code != 0 || r.stdout != "warm\nnew\n0\n" {
		t.Fatalf("writing a scratch cache: %v", r)
	}
	snap.unchanged(t)
}

// TestScratchCachesOnlyInTheDefault: a caller's policy gets no scratch
// caches (its caches stay read-only), nor does Landlock-only mode, which
// says why in the report; the default lists them.
func TestScratchCachesOnlyInTheDefault(t *testing.T) {
	w := newWorkspace(t)
	mustMkdir(t, filepath.Join(w.home, ".npm"))
	touch := []string{"sh", "-c", "touch ~/.npm/x"}

	r := w.sandbox(t, wsPolicy(t, w.root), nil, touch...)
	if r.code == 0 || !strings.Contains(r.stderr, "Read-only file system") {
		t.Errorf("a caller's policy made ~/.npm writable: %v", r)
	}
	// fsOpts: Landlock-only mode on ABI < 3 needs --allow-degraded.
	r = run(t, runOpts{env: w.env(), dir: w.root}, append(fsOpts(t, "landlock"), "--", touch[0], touch[1], touch[2])...)
	if r.code == 0 || r.code == 125 {
		t.Errorf("Landlock-only mode made ~/.npm writable, or did not run: %v", r)
	}
	var ex struct {
		Enforcement struct {
			Filesystem struct {
				ScratchCaches []string `json:"scratch_caches"`
				Note          string   `json:"scratch_caches_note"`
			} `json:"filesystem"`
		} `json:"enforcement"`
	}
	r = run(t, runOpts{env: w.env(), dir: w.root}, append(fsOpts(t, "landlock"), "--explain")...)
	if err := json.Unmarshal([]byte(r.stdout), &ex); err != nil || len(ex.Enforcement.Filesystem.ScratchCaches) != 0 || !strings.Contains(ex.Enforcement.Filesystem.Note, "read-only") {
		t.Errorf("--fs-mode landlock --explain: %+v %v %v", ex.Enforcement.Filesystem, err, r)
	}
	r = run(t, runOpts{env: w.env(), dir: w.root}, "--explain")
	if err := json.Unmarshal([]byte(r.stdout), &ex); err != nil || len(ex.Enforcement.Filesystem.ScratchCaches) != 1 || ex.Enforcement.Filesystem.ScratchCaches[0] != filepath.Join(w.home, ".npm") {
		t.Errorf("--explain of the default: %+v %v", ex.Enforcement.Filesystem, err)
	}
}

// TestScratchCacheLayersUnprivileged: the same throwaway overlay for an
// unprivileged user (overlayfs in a user namespace, userxattr), which the
// VM guests' older kernels run too (real builds are skipped there). The
// default's limits need --allow-degraded without a delegated cgroup.
func TestScratchCacheLayersUnprivileged(t *testing.T) {
	isoNeedRoot(t)
	if kernelBefore(5, 11) {
		t.Skip("overlayfs in a user namespace: not before Linux 5.11 (the cache stays read-only there, as --explain says)")
	}
	w := isoWorkspace(t, isoNobody)
	npmCache := filepath.Join(w.home, ".npm")
	mustMkdir(t, npmCache)
	write(t, filepath.Join(npmCache, "warm"), "warm\n")
	chownPaths(t, int(isoNobody.cred.Uid), int(isoNobody.cred.Gid), npmCache)
	snap := snapshotCaches(t, npmCache)
	r := run(t, runOpts{env: buildEnv(w), dir: w.root, cred: isoNobody.cred}, "--allow-degraded", "--", "sh", "-c",
		`cat ~/.npm/warm && echo changed > ~/.npm/warm && echo new > ~/.npm/new && cat ~/.npm/new`)
	if r.code != 0 || r.stdout != "warm\nnew\n" {
		t.Fatalf("writing a scratch cache as nobody: %v", r)
	}
	snap.unchanged(t)
}
