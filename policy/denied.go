package policy

import (
	"path/filepath"
	"strconv"
	"strings"

	"sandbox-executable/fsdeps"
)

// deniedList collects DeniedPaths, de-duplicated by Path (first wins).
type deniedList struct {
	list []DeniedPath
	seen map[string]bool
}

func (d *deniedList) add(p DeniedPath) {
	if d.seen == nil {
		d.seen = make(map[string]bool)
	}
	if d.seen[p.Path] {
		return
	}
	d.seen[p.Path] = true
	d.list = append(d.list, p)
}

// addResolved adds the canonical form of the absolute path given. When the
// given path is itself a symlink, its target is what is denied; with
// denyLink the symlink itself is denied too, so that a process allowed to
// write its parent cannot swap it for a real file or directory.
func (d *deniedList) addResolved(c canonical, given, source string, denyLink bool) {
	d.add(DeniedPath{Path: c.Path, Source: source, Given: givenIfDifferent(given, c.Path), Exists: c.Exists})
	if denyLink && c.Link != "" {
		d.add(DeniedPath{Path: c.Link, Source: source + " (the symlink itself)", Given: givenIfDifferent(given, c.Link), Exists: true})
	}
}

func givenIfDifferent(given, path string) string {
	if given == path {
		return ""
	}
	return given
}

// sensitiveEntry is one sensitive path to deny, with where it came from.
type sensitiveEntry struct {
	SensitivePath
	source  string // "sensitive_paths[N]" or "default_sensitive_paths"
	errPath string // the JSON path to name in an error, "" for defaults
}

// sensitiveEntries returns the sensitive paths in force (CONTRACT §6): the
// policy's list for workspace_write when it has one, else VT Code's
// defaults (read_only always uses the defaults).
func (r *resolver) sensitiveEntries() ([]sensitiveEntry, error) {
	p := &r.in.Policy
	if p.Kind == KindWorkspaceWrite && p.SensitivePaths != nil {
		var out []sensitiveEntry
		for i, sp := range *p.SensitivePaths {
			idx := "sensitive_paths[" + strconv.Itoa(i) + "]"
			out = append(out, sensitiveEntry{SensitivePath: sp, source: idx, errPath: idx + ".path"})
		}
		return out, nil
	}
	defaults, err := defaultSensitivePaths(r.env, r.in.PasswdHome)
	if err != nil {
		return nil, r.policyErr("", err.Error())
	}
	// VT Code's own directories under the other home too (see otherHome).
	if other := r.otherHome(); other != "" {
		if more, err := defaultSensitivePaths(append(environ{"HOME=" + other}, r.env...), r.in.PasswdHome); err == nil {
			for _, d := range more {
				if !containsString(defaults, d) {
					defaults = append(defaults, d)
				}
			}
		}
	}
	out := make([]sensitiveEntry, len(defaults))
	for i, d := range defaults {
		out[i] = sensitiveEntry{
			SensitivePath: SensitivePath{Path: d, BlockRead: true, BlockWrite: true},
			source:        "default_sensitive_paths",
		}
	}
	return out, nil
}

// denySensitive adds the sensitive paths to ReadDenied/WriteDenied.
func (r *resolver) denySensitive(read, write *deniedList) error {
	entries, err := r.sensitiveEntries()
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.BlockRead && !e.BlockWrite {
			continue
		}
		c, err := r.resolveSensitive(e, r.home)
		if err != nil {
			return err
		}
		cs := []canonical{c}
		if underHome(e.Path) {
			if other := r.otherHome(); other != "" {
				o, err := r.resolveSensitive(e, func() (string, error) { return other, nil })
				if err != nil {
					return err
				}
				cs = append(cs, o)
			}
		}
		for _, c := range cs {
			if e.BlockRead {
				read.addResolved(c, e.Path, e.source, false)
			}
			if e.BlockWrite {
				write.addResolved(c, e.Path, e.source, true)
			}
		}
	}
	return nil
}

// underHome reports whether p is "~" or "~/...".
func underHome(p string) bool { return p == "~" || strings.HasPrefix(p, "~/") }

// resolveSensitive canonicalizes e's path, "~" expanded to home().
func (r *resolver) resolveSensitive(e sensitiveEntry, home func() (string, error)) (canonical, error) {
	fail := func(msg string) error {
		if e.errPath == "" {
			return r.policyErr("", "default sensitive path "+quote(e.Path)+": "+msg)
		}
		return r.policyErr(e.errPath, msg)
	}
	if strings.IndexByte(e.Path, 0) >= 0 {
		return canonical{}, fail(quote(e.Path) + ": contains a NUL byte")
	}
	expanded, err := expandTilde(e.Path, home)
	if err != nil {
		return canonical{}, fail("cannot expand ~: " + err.Error())
	}
	if !filepath.IsAbs(expanded) {
		return canonical{}, fail(quote(e.Path) + ": not an absolute path (only \"~\", \"~/...\" and absolute paths can be denied)")
	}
	c, err := r.memo.resolveLenient(expanded)
	if err != nil {
		return canonical{}, fail(plain(expanded) + ": " + errnoText(err))
	}
	return c, nil
}

// protectedNames are created or modified only by the user, never by the
// sandboxed program, beneath every writable root (VT Code's
// sensitive_paths_for_execution).
var protectedNames = []string{".git", ".vtcode", ".codex", ".agents"}

// gitDirEntries are the entries of a git directory that git runs or
// loads (gitrepository-layout(5)): the configuration, the worktree's own,
// the pointer to a common directory (whose config and hooks git would then
// use), the hooks, info (attributes and exclude), the submodules' and the
// linked worktrees' own git directories (each with a config and hooks),
// and the remotes and branches files of old, which define a remote's URL.
// --allow-git-commit keeps them unwritable in a writable git directory;
// everything else there (objects, refs, logs, the index, HEAD, the
// state of a rebase or a merge) is data git reads and writes.
var gitDirEntries = []string{"config", "config.worktree", "commondir", "hooks", "info", "modules", "worktrees", "remotes", "branches"}

// protectMetadata write-denies the protected names beneath every writable
// root, existing or not, and the git directories a ".git" file points to;
// with --allow-git-commit, a root's ".git" directory is writable instead,
// but for its gitDirEntries.
func (r *resolver) protectMetadata(roots []WritablePath, write *deniedList) error {
	for _, root := range roots {
		for _, name := range protectedNames {
			given := filepath.Join(root.Path, name)
			c, err := r.memo.resolveLenient(given)
			if err != nil {
				return r.policyErr("", "protected metadata "+plain(given)+": "+errnoText(err))
			}
			if name == ".git" && r.in.Changes != nil && r.in.Changes.GitCommit != "" {
				ok, err := r.writableGitDir(root.Path, given, c, write)
				if err != nil {
					return err
				}
				if ok {
					continue
				}
			}
			write.addResolved(c, given, "protected_metadata", true)
			if name == ".git" && c.Exists {
				if err := r.protectGitFile(root.Path, c.Path, given, write); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// writableGitDir makes the ".git" of root (given, resolved to c) a
// writable git directory for --allow-git-commit when it is one git would
// use as it is: a directory (not a link to one) with no commondir of its
// own; its gitDirEntries are write-denied. Otherwise (a ".git" file of a
// linked worktree or a submodule, whose git directory lies elsewhere; a
// link; nothing yet) it stays protected as a whole, and a note says so.
func (r *resolver) writableGitDir(root, given string, c canonical, write *deniedList) (bool, error) {
	from := r.in.Changes.GitCommit
	fi, err := fsdeps.Lstat(given)
	switch {
	case err != nil || !c.Exists:
		r.note(from + ": " + plain(root) + " has no .git directory, so nothing of git's becomes writable there, and no repository can be made there (a repository above it is committed to from its top: run there, or name the top with --rw).")
		return false, nil
	case c.Link != "" || !fi.IsDir():
		r.note(from + ": " + plain(given) + " is not a git directory but a link or a gitdir file (a linked worktree, a submodule); it and what it points to stay unwritable.")
		return false, nil
	}
	if _, err := fsdeps.Lstat(filepath.Join(c.Path, "commondir")); err == nil {
		r.note(from + ": " + plain(c.Path) + " has a commondir (its config and hooks are another directory's); it stays unwritable.")
		return false, nil
	}
	source := "protected_metadata (what git runs or loads in " + plain(c.Path) + ", writable by " + from + ")"
	for _, name := range gitDirEntries {
		p := filepath.Join(c.Path, name)
		e, err := r.memo.resolveLenient(p)
		if err != nil {
			return false, r.policyErr("", "protected metadata "+plain(p)+": "+errnoText(err))
		}
		write.addResolved(e, p, source, true)
	}
	r.plan.Filesystem.GitDirs = append(r.plan.Filesystem.GitDirs, GitDir{Path: c.Path, Root: root, From: from})
	return true, nil
}

// protectGitFile handles a ".git" that is a file "gitdir: X" (worktrees,
// submodules): X (relative to the root) holds the repository's hooks and
// config, so it is write-denied too, and so is the common directory named
// by X/commondir (relative to X) when there is one.
func (r *resolver) protectGitFile(root, gitFile, given string, write *deniedList) error {
	x, ok := gitFileTarget(gitFile)
	if !ok {
		return nil
	}
	abs := x
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, abs)
	}
	gitdir, err := r.memo.resolveLenient(abs)
	if err != nil {
		return r.policyErr("", "gitdir of "+plain(given)+": "+plain(abs)+": "+errnoText(err))
	}
	write.addResolved(gitdir, x, "protected_metadata (gitdir of "+plain(given)+")", true)
	if !gitdir.Exists {
		return nil
	}
	common, ok := commonDirOf(gitdir.Path)
	if !ok {
		return nil
	}
	abs = common
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(gitdir.Path, abs)
	}
	c, err := r.memo.resolveLenient(abs)
	if err != nil {
		return r.policyErr("", "commondir of "+plain(gitdir.Path)+": "+plain(abs)+": "+errnoText(err))
	}
	write.addResolved(c, common, "protected_metadata (commondir of "+plain(gitdir.Path)+")", true)
	return nil
}

// gitFileTarget returns X of a ".git" file "gitdir: X" at the canonical
// path gitFile, as git reads it (read_gitfile_gently).
func gitFileTarget(gitFile string) (string, bool) {
	content, ok := readSmallRegularFile(gitFile)
	if !ok {
		return "", false
	}
	line := strings.TrimRight(content, "\r\n")
	x, found := strings.CutPrefix(line, "gitdir: ")
	if !found || x == "" || strings.ContainsAny(x, "\x00\n") {
		return "", false
	}
	return x, true
}

// commonDirOf returns the content of gitdir's "commondir" file (relative
// to gitdir unless absolute): the directory holding the hooks and config
// a linked worktree shares with the main one.
func commonDirOf(gitdir string) (string, bool) {
	content, ok := readSmallRegularFile(filepath.Join(gitdir, "commondir"))
	if !ok {
		return "", false
	}
	common := strings.TrimRight(content, "\r\n")
	if common == "" || strings.ContainsAny(common, "\x00\n") {
		return "", false
	}
	return common, true
}

// maxGitFile bounds how much of a ".git" or "commondir" file is read: git's
// own limit (read_gitfile_gently), so that any file git follows is followed
// here too (trailing newlines, which git strips, can make one large).
const maxGitFile = 1 << 20

// readSmallRegularFile returns the content of p when it is a regular file
// of at most maxGitFile bytes. It never blocks on a FIFO or device and never
// follows a symlink in the last component (p is already canonical).
func readSmallRegularFile(p string) (string, bool) {
	f, err := fsdeps.ReadNoFollow(p, maxGitFile)
	if err != nil || !f.Info.IsRegular() || f.Size > maxGitFile || len(f.Data) > maxGitFile {
		return "", false
	}
	return string(f.Data), true
}
