package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// scratchPaths resolves in and returns the existing scratch caches' paths.
func scratchPaths(t *testing.T, in Input) []string {
	t.Helper()
	var out []string
	for _, c := range mustResolve(t, in).Filesystem.ScratchCaches {
		if !c.Exists {
			continue
		}
		out = append(out, c.Path)
	}
	return out
}

func TestScratchCachesOnlyForTheDefault(t *testing.T) {
	e := newTestEnv(t)
	npm, gobuild, cargo := filepath.Join(e.home, ".npm"), filepath.Join(e.home, ".cache", "go-build"), filepath.Join(e.home, ".cargo", "registry")
	mkdirs(t, npm, gobuild, cargo)
	in := e.input(*DefaultStandalone(e.ws, HostSize{CPUs: 2, MemoryBytes: 4 << 30}))
	if got := scratchPaths(t, in); got != nil {
		t.Fatalf("scratch caches without Standalone: %q", got)
	}
	in.Standalone = true
	plan := mustResolve(t, in)
	want := []ScratchCache{{gobuild, "go build cache", "GOCACHE", true}, {filepath.Join(e.home, "go/pkg/mod"), "go module cache", "GOMODCACHE", false},
		{npm, "npm", "npm_config_cache", true}, {filepath.Join(e.home, ".cache/pip"), "pip", "PIP_CACHE_DIR", false}, {cargo, "cargo registry", "", true}}
	if !reflect.DeepEqual(plan.Filesystem.ScratchCaches, want) {
		t.Fatalf("scratch caches %+v, want %+v (missing ones with a variable to move them, nothing created)", plan.Filesystem.ScratchCaches, want)
	}
	if _, err := os.Lstat(filepath.Join(e.home, ".cache/pip")); err == nil {
		t.Fatal("a missing cache was made")
	}
}

func TestScratchCachesFromEnvironment(t *testing.T) {
	e := newTestEnv(t)
	gocache, xdg := filepath.Join(e.dir, "gocache"), filepath.Join(e.dir, "xdg")
	mkdirs(t, gocache, filepath.Join(xdg, "pip"))
	in := e.input(*DefaultStandalone(e.ws, HostSize{CPUs: 2, MemoryBytes: 4 << 30}))
	in.Standalone = true
	// GOMODCACHE inside GOCACHE: one overlay would hide the other.
	in.Environ = append(in.Environ, "GOCACHE="+gocache, "XDG_CACHE_HOME="+xdg, "GOMODCACHE="+gocache+"/mod", "npm_config_cache=relative/is/ignored")
	mkdirs(t, gocache+"/mod")
	if got, want := scratchPaths(t, in), []string{gocache, filepath.Join(xdg, "pip")}; !slices.Equal(got, want) {
		t.Fatalf("scratch caches %q, want %q", got, want)
	}
}

// A cache that holds or lies beneath a denied path, or holds or lies in
// a writable root, is left alone.
func TestScratchCachesAvoidDeniedPathsAndRoots(t *testing.T) {
	e := newTestEnv(t)
	npm, pip, gobuild := filepath.Join(e.home, ".npm"), filepath.Join(e.home, ".cache", "pip"), filepath.Join(e.home, ".cache", "go-build")
	mkdirs(t, npm, pip, gobuild)
	pol := DefaultStandalone(e.ws, HostSize{CPUs: 2, MemoryBytes: 4 << 30})
	pol.SensitivePaths = &[]SensitivePath{{Path: "~/.npm/_authToken", BlockRead: true, BlockWrite: true}}
	in := e.input(*pol)
	in.Standalone = true
	if got, want := scratchPaths(t, in), []string{gobuild, pip}; !slices.Equal(got, want) {
		t.Fatalf("a denied path inside: scratch caches %q, want %q", got, want)
	}
	pol.SensitivePaths = &[]SensitivePath{{Path: "~/.cache", BlockRead: true, BlockWrite: false}}
	in = e.input(*pol)
	in.Standalone = true
	if got, want := scratchPaths(t, in), []string{npm}; !slices.Equal(got, want) {
		t.Fatalf("a denied path around: scratch caches %q, want %q", got, want)
	}
	// The working directory inside a cache, and around every cache.
	proj := filepath.Join(npm, "proj")
	mkdirs(t, proj)
	in = e.input(*DefaultStandalone(proj, HostSize{CPUs: 2, MemoryBytes: 4 << 30}))
	in.ProcessCwd, in.Standalone = proj, true
	if got, want := scratchPaths(t, in), []string{gobuild, pip}; !slices.Equal(got, want) {
		t.Fatalf("a root inside: scratch caches %q, want %q", got, want)
	}
	in = e.input(*DefaultStandalone(e.home, HostSize{CPUs: 2, MemoryBytes: 4 << 30}))
	in.ProcessCwd, in.Standalone = e.home, true
	if got := scratchPaths(t, in); got != nil {
		t.Fatalf("a root around: scratch caches %q", got)
	}
}

func TestGoBuildVCSOutsideRepositories(t *testing.T) {
	e := newTestEnv(t)
	goflags := func(in Input) (string, []string) {
		t.Helper()
		p := mustResolve(t, in)
		v, _ := environ(p.Env.Vars).lookup("GOFLAGS")
		return v, p.Env.Set
	}
	in := e.input(*DefaultStandalone(e.ws, HostSize{CPUs: 2, MemoryBytes: 4 << 30}))
	if v, set := goflags(in); v != "" || set != nil {
		t.Fatalf("a caller's policy got GOFLAGS %q %q", v, set)
	}
	in.Standalone = true
	if v, set := goflags(in); v != "-buildvcs=false" || !slices.Equal(set, []string{"GOFLAGS=-buildvcs=false"}) {
		t.Fatalf("GOFLAGS %q set %q", v, set)
	}
	in.Environ = append(in.Environ, "GOFLAGS=-mod=mod -buildvcs=auto")
	if v, _ := goflags(in); v != "-mod=mod -buildvcs=auto -buildvcs=false" {
		t.Fatalf("GOFLAGS %q", v)
	}
	in.Environ = append(e.input(SandboxPolicy{}).Environ, "GOFLAGS=-buildvcs=false")
	if v, set := goflags(in); v != "-buildvcs=false" || set != nil {
		t.Fatalf("GOFLAGS %q set %q", v, set)
	}
	// An empty .git (a run's placeholder) is no repository.
	mkdirs(t, filepath.Join(e.ws, ".git"))
	in.Environ = e.input(SandboxPolicy{}).Environ
	if v, _ := goflags(in); v != "-buildvcs=false" {
		t.Fatalf("an empty .git: GOFLAGS %q", v)
	}
	// In a repository (or below one) Go stamps as it would outside.
	if err := os.WriteFile(filepath.Join(e.ws, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, set := goflags(in); v != "" || set != nil {
		t.Fatalf("in a repository: GOFLAGS %q set %q", v, set)
	}
}
