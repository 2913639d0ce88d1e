package policy

import (
	"errors"
	"io/fs"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"sandbox-executable/fsdeps"
)

// gitRepo is a repository git would use for a writable root: the one whose
// ".git" is at the root or, when there is none, the nearest above it (git's
// discovery).
type gitRepo struct {
	top    string // the work tree's top, canonical
	gitDir string // canonical; "" when .git is neither a directory nor a gitdir file
	common string // the common directory (hooks, config), canonical
}

// hookGuard collects, for one Resolve, the hook directories of the
// repositories at the writable roots and write-denies those a program
// could write.
type hookGuard struct {
	r      *resolver
	roots  []WritablePath
	write  *deniedList
	parsed map[string]*gitConfigFile // by canonical path
	global []string                  // the system and global config files, as git names them
}

// gitConfigFile is what one configuration file sets of gitKeys, in order.
type gitConfigFile struct {
	settings []gitSetting
}

// gitSetting is one variable of gitKeys set in a configuration file.
type gitSetting struct {
	key   *gitKey
	name  string // as a user writes it: "filter.lfs.clean"
	value string
}

// foundSetting is a gitSetting with the file that set it.
type foundSetting struct {
	gitSetting
	file string // canonical
	// writable: the program may write the file itself (a global file in
	// a writable HOME): nothing it names is worth refusing a run for.
	writable bool
}

// protectHooks write-denies, for each repository git would use at a
// writable root, what git runs or loads from a place a program could
// otherwise write (or create): the hooks directories of every
// core.hooksPath value in the configuration git reads for the repository
// (system, global, the repository's own and its worktree's, and every file
// they include, whatever includeIf's condition: taking every value
// protects the one git ends up using), relative ones taken from the top of
// the work tree as git does; the real target of a hooks directory that is
// a symlink; the targets of hooks that are symlinks; every file the other
// variables of gitKeys name (a program, a script, a loaded file: see
// protectSetting); and every symlink inside a writable root on the way to
// any of them, which could otherwise be pointed elsewhere. An included
// configuration file that lies in a writable root is write-denied too (one
// could otherwise set core.hooksPath, or anything else git runs), unless
// the file including it is writable itself: a policy that makes HOME
// writable gives ~/.gitconfig away, as it gives ~/.bashrc. Git itself is
// never run: the files are parsed here (through fsdeps, so that a stored
// decision is taken again when one of them changes).
func (r *resolver) protectHooks(roots []WritablePath, write *deniedList) error {
	repos, err := r.gitRepos(roots)
	if err != nil || len(repos) == 0 {
		return err
	}
	g := &hookGuard{r: r, roots: roots, write: write, parsed: map[string]*gitConfigFile{}}
	g.global = g.globalConfigFiles()
	for _, repo := range repos {
		if err := g.protectRepo(repo); err != nil {
			return err
		}
	}
	return nil
}

// gitRepos finds the repository of each root, de-duplicated by top.
func (r *resolver) gitRepos(roots []WritablePath) ([]gitRepo, error) {
	var repos []gitRepo
	seen := map[string]bool{}
	for _, root := range roots {
		for top := root.Path; ; top = filepath.Dir(top) {
			dotGit := filepath.Join(top, ".git")
			c, err := r.memo.resolveLenient(dotGit)
			if err == nil && c.Exists {
				if !seen[top] {
					seen[top] = true
					repo, err := r.gitRepoAt(top, dotGit, c.Path)
					if err != nil {
						return nil, err
					}
					repos = append(repos, repo)
				}
				break
			}
			if top == "/" {
				break
			}
		}
	}
	return repos, nil
}

// gitRepoAt describes the repository whose ".git" (given, resolved to
// dotGit) is at top.
func (r *resolver) gitRepoAt(top, given, dotGit string) (gitRepo, error) {
	repo := gitRepo{top: top}
	fi, err := fsdeps.Stat(dotGit)
	switch {
	case err != nil:
		return repo, nil
	case fi.IsDir():
		repo.gitDir = dotGit
	case fi.Mode().IsRegular():
		x, ok := gitFileTarget(dotGit)
		if !ok {
			return repo, nil
		}
		if !filepath.IsAbs(x) {
			x = top + "/" + x
		}
		c, err := r.memo.resolveLenient(x)
		if err != nil {
			return repo, r.policyErr("", "gitdir of "+plain(given)+": "+plain(x)+": "+errnoText(err))
		}
		repo.gitDir = c.Path
	default:
		return repo, nil
	}
	repo.common = repo.gitDir
	if common, ok := commonDirOf(repo.gitDir); ok {
		if !filepath.IsAbs(common) {
			common = repo.gitDir + "/" + common
		}
		c, err := r.memo.resolveLenient(common)
		if err != nil {
			return repo, r.policyErr("", "commondir of "+plain(repo.gitDir)+": "+plain(common)+": "+errnoText(err))
		}
		repo.common = c.Path
	}
	return repo, nil
}

// globalConfigFiles are the configuration files git reads for every
// repository: the system's and the user's, every candidate (git reads the
// XDG one and ~/.gitconfig both; the environment the later git runs with
// may point elsewhere than the helper's, so both variables' files count).
func (g *hookGuard) globalConfigFiles() []string {
	files := []string{systemGitConfig}
	for _, name := range []string{"GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL"} {
		if v, _ := g.r.env.lookup(name); filepath.IsAbs(v) {
			files = append(files, v)
		}
	}
	if xdg, _ := g.r.env.lookup("XDG_CONFIG_HOME"); filepath.IsAbs(xdg) {
		files = append(files, xdg+"/git/config")
	}
	if home, err := g.r.home(); err == nil {
		files = append(files, home+"/.config/git/config", home+"/.gitconfig")
	}
	return files
}

// protectRepo protects what git runs and loads for one repository.
func (g *hookGuard) protectRepo(repo gitRepo) error {
	var own []string
	if repo.gitDir != "" {
		own = []string{repo.common + "/config", repo.gitDir + "/config.worktree"}
	}
	var values []foundSetting
	// traversed says, per file read, whether its includes were read as
	// ones to protect (see read): a file first read as writable (a global
	// file in a writable HOME) is read again when a protected file
	// includes it. Values found twice are denied once.
	traversed := map[string]bool{}
	// read reads the configuration file at file (written as given) and what
	// it includes. An included file inside a writable root is write-denied
	// unless the file including it is itself writable by the program
	// (writableIncluder): denying it would then gain nothing (a writable
	// HOME gives ~/.gitconfig away, as it gives ~/.bashrc), and a missing
	// one would need a placeholder that git refuses to read.
	var read func(file, given, includedBy string, writableIncluder bool, depth int) error
	read = func(file, given, includedBy string, writableIncluder bool, depth int) error {
		c, links, err := g.r.memo.walkPath(file, true)
		if err != nil {
			return nil // a loop: git cannot read it either
		}
		if includedBy != "" && !writableIncluder {
			if err := g.protect(c, links, given, "protected_metadata (git config included by "+plain(includedBy)+")"); err != nil {
				return err
			}
		}
		writable := g.inRoot(c.Path) && !g.covered(c.Path)
		if done, seen := traversed[c.Path]; (seen && (done || writable)) || depth > maxGitIncludeDepth {
			return nil
		}
		traversed[c.Path] = !writable
		cfg, err := g.parse(c)
		if err != nil || cfg == nil {
			return err
		}
		for _, set := range cfg.settings {
			if set.key.Value != includeFile {
				values = append(values, foundSetting{set, c.Path, writable})
				continue
			}
			inc := set.value
			p, ok := g.expand(inc)
			if !ok {
				continue
			}
			if !filepath.IsAbs(p) {
				p = filepath.Dir(c.Path) + "/" + p
			}
			if err := read(p, inc, c.Path, writable, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	// The repository's own files (inside its protected git directory)
	// first, then the system's and the user's.
	for _, f := range own {
		if err := read(f, f, "", false, 0); err != nil {
			return err
		}
	}
	for _, f := range g.global {
		if err := read(f, f, "", false, 0); err != nil {
			return err
		}
	}

	// The hooks directory git uses without core.hooksPath.
	if repo.gitDir != "" {
		dirs := []string{repo.common + "/hooks"}
		if repo.gitDir != repo.common {
			dirs = append(dirs, repo.gitDir+"/hooks")
		}
		for _, d := range dirs {
			if err := g.protectHookDir(d, d, "protected_metadata (hooks of the repository at "+plain(repo.top)+")"); err != nil {
				return err
			}
		}
	}
	for _, v := range values {
		if v.key.Value != hooksDir {
			if err := g.protectSetting(repo, v); err != nil {
				return err
			}
			continue
		}
		p, ok := g.expand(v.value)
		if !ok || p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = repo.top + "/" + p
		}
		source := "protected_metadata (core.hooksPath of the repository at " + plain(repo.top) + ", set in " + plain(v.file) + ")"
		if err := g.protectHookDir(p, v.value, source); err != nil {
			return err
		}
	}
	return nil
}

// systemGitConfig is git's system configuration file (a variable for
// tests, which must not depend on the host's).
var systemGitConfig = "/etc/gitconfig"

// maxGitIncludeDepth bounds include chains; git's own limit is 10.
const maxGitIncludeDepth = 16

// parse returns what the configuration file at c says, parsed once per
// Resolve; nil when it does not exist or cannot be read (git cannot read
// it either). A file git would refuse, or one too large to be read here,
// is an error: what it sets cannot be known.
func (g *hookGuard) parse(c canonical) (*gitConfigFile, error) {
	if !c.Exists {
		return nil, nil
	}
	if cfg, ok := g.parsed[c.Path]; ok {
		return cfg, nil
	}
	text, err := readGitConfig(c.Path)
	if err != nil {
		return nil, g.r.policyErr("", "protected metadata: git config "+plain(c.Path)+": "+err.Error()+"; what it makes git run cannot be known, so refusing")
	}
	var cfg *gitConfigFile
	if text != nil {
		entries, err := parseGitConfig(*text)
		if err != nil {
			return nil, g.r.policyErr("", "protected metadata: git config "+plain(c.Path)+": "+err.Error()+" (git refuses it too); what it makes git run cannot be known, so refusing")
		}
		cfg = &gitConfigFile{}
		for _, e := range entries {
			if !e.HasValue {
				continue
			}
			if k := lookupGitKey(e); k != nil {
				cfg.settings = append(cfg.settings, gitSetting{key: k, name: gitKeyName(e, k), value: e.Value})
			}
		}
	}
	g.parsed[c.Path] = cfg
	return cfg, nil
}

// readGitConfig reads the configuration file at the canonical path p: nil
// when it is not a regular file or cannot be opened.
func readGitConfig(p string) (*string, error) {
	f, err := fsdeps.ReadNoFollow(p, maxGitFile)
	var pe *fs.PathError
	if err != nil && errors.As(err, &pe) && pe.Op == "read" {
		return nil, errors.New(errnoText(err))
	}
	if err != nil || !f.Info.IsRegular() {
		return nil, nil
	}
	b := f.Data
	if len(b) > maxGitFile {
		return nil, errors.New("larger than " + strconv.Itoa(maxGitFile) + " bytes")
	}
	s := string(b)
	return &s, nil
}

// expand expands a configuration path value as git's interpolate_path
// does: "~" and "~/..." with the home directory, "~user/..." with that
// user's. A value git cannot expand ("~nobody-such/x", "%(prefix)/...",
// which names git's installation) is not one git uses: false.
func (g *hookGuard) expand(v string) (string, bool) {
	if strings.HasPrefix(v, "%(prefix)/") {
		return "", false
	}
	if !strings.HasPrefix(v, "~") {
		return v, true
	}
	name, rest, _ := strings.Cut(v[1:], "/")
	var home string
	if name == "" {
		h, err := g.r.home()
		if err != nil {
			return "", false
		}
		home = h
	} else {
		// The password database through NSS: nothing a recorded
		// dependency can check.
		fsdeps.Taint("policy: " + quote("~"+name) + " in a git configuration: the password database (user.Lookup), which no dependency can check")
		u, err := user.Lookup(name)
		if err != nil || u.HomeDir == "" {
			return "", false
		}
		home = u.HomeDir
	}
	if rest == "" && !strings.Contains(v, "/") {
		return home, true
	}
	return home + "/" + rest, true
}

// protectHookDir write-denies the hook directory at p (written as given)
// where a program could write it, and the targets of the hooks in it that
// are symlinks.
func (g *hookGuard) protectHookDir(p, given, source string) error {
	c, links, err := g.r.memo.walkPath(p, true)
	if err != nil {
		return nil // a loop: git finds no hooks there
	}
	if err := g.protect(c, links, given, source); err != nil {
		return err
	}
	if !c.Exists {
		return nil
	}
	entries, err := fsdeps.ReadDir(c.Path)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		hook := c.Path + "/" + e.Name()
		hc, hlinks, err := g.r.memo.walkPath(hook, true)
		if err != nil {
			continue
		}
		if err := g.protect(hc, hlinks, hook, "protected_metadata (target of the hook "+plain(hook)+")"); err != nil {
			return err
		}
	}
	return nil
}

// protect write-denies the resolved path c, and every symlink followed on
// the way to it (links) that a program could replace, when they lie inside
// a writable root and are not denied already. A path that is a writable
// root itself cannot be protected without taking the root away: refused.
func (g *hookGuard) protect(c canonical, links []string, given, source string) error {
	for _, root := range g.roots {
		if c.Path == root.Path {
			return g.r.policyErr("", "protected metadata: the writable root "+plain(root.Path)+" is where git would run hooks or read configuration from ("+
				source+", given as "+quote(given)+"); a program could write there, so refusing")
		}
	}
	if g.inRoot(c.Path) && !g.covered(c.Path) {
		g.write.add(DeniedPath{Path: c.Path, Source: source, Given: givenIfDifferent(given, c.Path), Exists: c.Exists})
	}
	for _, l := range links {
		if !g.inRoot(l) || g.covered(l) {
			continue
		}
		why := " (a symbolic link on the way)"
		if l == c.Link {
			why = " (the symlink itself)"
		}
		g.write.add(DeniedPath{Path: l, Source: source + why, Given: givenIfDifferent(given, l), Exists: true})
	}
	return nil
}

// inRoot reports whether p lies in a writable root.
func (g *hookGuard) inRoot(p string) bool {
	for _, root := range g.roots {
		if Within(p, root.Path) {
			return true
		}
	}
	return false
}

// covered reports whether p is write-denied already.
func (g *hookGuard) covered(p string) bool {
	for _, d := range g.write.list {
		if Within(p, d.Path) {
			return true
		}
	}
	return false
}
