package policy

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"sandbox-executable/fsdeps"
)

// ScratchCache is a build cache of the host that the built-in default lets
// the program write into a throwaway copy of: it reads the host's warm
// cache, and whatever it writes there is gone with the run (in exact mode,
// an overlay whose upper layer is a tmpfs of the run's mount namespace).
// The host's directory itself is never written.
type ScratchCache struct {
	// Path is the cache directory, absolute and canonical.
	Path string
	// Tool names what the cache is for ("go build cache", "npm").
	Tool string
	// EnvVar is the variable that moves the tool's cache elsewhere
	// ("GOCACHE"), "" for a tool without one this default may set.
	EnvVar string
	// Exists is false for a cache that is not there yet (a fresh HOME):
	// the tool would fail to make it (the home is read-only), so the run
	// points EnvVar at an empty directory of its private temp dir instead.
	// Path is then the clean absolute path the tool would use.
	Exists bool
}

// scratchCandidate is a cache directory where a build tool looks by
// default, relative to the home directory, or named by an environment
// variable of the caller's.
type scratchCandidate struct {
	tool   string
	envVar string // when set (absolute), used instead of home+rel
	rel    string
}

// scratchCandidates are the caches the built-in default offers. Only the
// tools' own default locations and their standard variables are looked at.
var scratchCandidates = []scratchCandidate{
	{tool: "go build cache", envVar: "GOCACHE", rel: ".cache/go-build"},
	{tool: "go module cache", envVar: "GOMODCACHE", rel: "go/pkg/mod"},
	{tool: "npm", envVar: "npm_config_cache", rel: ".npm"},
	{tool: "pip", envVar: "PIP_CACHE_DIR", rel: ".cache/pip"},
	{tool: "cargo registry", rel: ".cargo/registry"},
	{tool: "cargo git", rel: ".cargo/git"},
}

// scratchCaches decides Plan.Filesystem.ScratchCaches for the built-in
// default (Input.Standalone): each candidate that exists as a directory,
// is neither inside nor around a writable root, and neither holds nor lies
// beneath a denied path; and each that does not exist yet, outside the
// roots, whose tool has a variable to move it (its run gets an empty one).
// Nothing is created.
func (r *resolver) scratchCaches() []ScratchCache {
	if !r.in.Standalone {
		return nil
	}
	home, err := r.home()
	if err != nil {
		return nil
	}
	fsys := &r.plan.Filesystem
	var out []ScratchCache
	seen := map[string]bool{}
	for _, c := range scratchCandidates {
		p := filepath.Join(home, c.rel)
		if rel, ok := strings.CutPrefix(c.rel, ".cache/"); ok {
			if xdg, _ := r.env.lookup("XDG_CACHE_HOME"); filepath.IsAbs(xdg) {
				p = filepath.Join(xdg, rel)
			}
		}
		if c.envVar != "" {
			if v, _ := r.env.lookup(c.envVar); filepath.IsAbs(v) {
				p = v
			}
		}
		real, err := fsdeps.EvalSymlinks(p)
		if err != nil {
			if _, lerr := fsdeps.Lstat(p); c.envVar != "" && errors.Is(lerr, fs.ErrNotExist) {
				if miss := filepath.Clean(p); !seen[miss] && !scratchConflicts(miss, fsys) {
					seen[miss] = true
					out = append(out, ScratchCache{Path: miss, Tool: c.tool, EnvVar: c.envVar})
				}
			}
			continue
		}
		if seen[real] || !filepath.IsAbs(real) {
			continue
		}
		if fi, err := fsdeps.Stat(real); err != nil || !fi.IsDir() || real == "/" {
			continue
		}
		// Overlay options cannot carry these characters unescaped.
		if strings.ContainsAny(real, ",:\\\n") {
			continue
		}
		if scratchConflicts(real, fsys) || nested(real, out) {
			continue
		}
		seen[real] = true
		out = append(out, ScratchCache{Path: real, Tool: c.tool, EnvVar: c.envVar, Exists: true})
	}
	return out
}

// scratchConflicts reports whether a cache at dir would touch what the
// policy decides elsewhere: a writable root at, inside or around it, or a
// denied path inside or around it.
func scratchConflicts(dir string, fsys *Filesystem) bool {
	near := func(p string) bool { return Within(p, dir) || Within(dir, p) }
	for _, r := range fsys.WritableRoots {
		if near(r.Path) {
			return true
		}
	}
	for _, d := range fsys.ReadDenied {
		if near(d.Path) {
			return true
		}
	}
	for _, d := range fsys.WriteDenied {
		if near(d.Path) {
			return true
		}
	}
	return false
}

// goBuildVCS, for the built-in default, adds -buildvcs=false to GOFLAGS
// when the working directory's root has no .git of its own and none of its
// ancestors has one either. The run covers the missing .git with an empty
// placeholder directory (so that the program cannot create one), which Go
// takes for a repository: "git status" fails there and every go build
// stops with "error obtaining VCS status", whatever -buildvcs says. Outside
// the sandbox Go would find no repository and stamp nothing, with any
// -buildvcs value: false is what every value means here. A GOFLAGS that
// already ends in -buildvcs=false is left alone.
func (r *resolver) goBuildVCS() {
	if !r.in.Standalone || r.plan.Policy != KindWorkspaceWrite {
		return
	}
	dir := r.plan.PolicyCwd
	for d := dir; ; d = filepath.Dir(d) {
		if isRepository(filepath.Join(d, ".git")) {
			return // a real repository (or a worktree's .git file)
		}
		if d == "/" || d == "." {
			break
		}
	}
	e := &r.plan.Env
	const flag = "-buildvcs=false"
	cur, ok := environ(e.Vars).lookup("GOFLAGS")
	if ok && strings.HasSuffix(" "+cur, " "+flag) {
		return
	}
	val := strings.TrimSpace(cur + " " + flag)
	kept := e.Vars[:0:0]
	for _, kv := range e.Vars {
		if !strings.HasPrefix(kv, "GOFLAGS=") {
			kept = append(kept, kv)
		}
	}
	e.Vars = append(kept, "GOFLAGS="+val)
	e.Set = append(e.Set, "GOFLAGS="+val)
	r.note("GOFLAGS gets -buildvcs=false: " + dir + " is not in a git repository, and the placeholder that keeps the program from creating " + filepath.Join(dir, ".git") + " would make Go's VCS stamping fail.")
}

// isRepository reports whether dotGit is a repository's .git as git sees
// one: a file (a worktree's or submodule's "gitdir:"), or a directory with
// a HEAD. An empty directory is not one: it is what a run's placeholder
// is, and a decision made while a run holds one (a warm run handed over
// at its end) must be the decision made without it.
func isRepository(dotGit string) bool {
	fi, err := fsdeps.Lstat(dotGit)
	if err != nil {
		return false
	}
	if !fi.IsDir() {
		return true
	}
	_, err = fsdeps.Lstat(filepath.Join(dotGit, "HEAD"))
	return err == nil
}

// nested reports whether dir is at, inside or around one of the caches
// already chosen: one overlay would hide the other.
func nested(dir string, chosen []ScratchCache) bool {
	for _, c := range chosen {
		if !c.Exists {
			continue
		}
		if Within(dir, c.Path) || Within(c.Path, dir) {
			return true
		}
	}
	return false
}
