package policy

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGitCommitWritableGitDir: with --allow-git-commit a root's .git
// directory is no longer denied as a whole; what git runs or loads in it
// is, existing or not, and so is what its configuration names there; a
// .git that is a gitdir file, a link, or missing stays protected, with a
// note; without the change nothing differs.
func TestGitCommitWritableGitDir(t *testing.T) {
	e := newTestEnv(t)
	g := filepath.Join(e.ws, ".git")
	gitDir(t, e, "[include]\n\tpath = extra.conf\n[core]\n\thooksPath = .git/my-hooks\n")
	mkdirs(t, g+"/objects", g+"/refs/heads", g+"/info")
	in := e.input(wsPolicy(e.ws))

	// Without the change: .git as a whole.
	write := deniedSources(mustResolve(t, in).Filesystem.WriteDenied)
	if write[g] != "protected_metadata" {
		t.Fatalf("without --allow-git-commit: .git is %q", write[g])
	}

	in.Changes = &Changes{GitCommit: "--allow-git-commit"}
	p := mustResolve(t, in)
	if len(p.Filesystem.GitDirs) != 1 || p.Filesystem.GitDirs[0] != (GitDir{Path: g, Root: e.ws, From: "--allow-git-commit"}) {
		t.Fatalf("git dirs: %+v", p.Filesystem.GitDirs)
	}
	write = deniedSources(p.Filesystem.WriteDenied)
	if _, denied := write[g]; denied {
		t.Errorf(".git still denied as a whole: %q", write[g])
	}
	own := "protected_metadata (what git runs or loads in " + g + ", writable by --allow-git-commit)"
	for _, name := range []string{"config", "config.worktree", "commondir", "hooks", "info", "modules", "worktrees", "remotes", "branches"} {
		if got := write[filepath.Join(g, name)]; got != own {
			t.Errorf(".git/%s: %q, want %q", name, got, own)
		}
	}
	if got := write[filepath.Join(g, "extra.conf")]; !strings.Contains(got, "git config included by") {
		t.Errorf("the included .git/extra.conf: %q", got)
	}
	if got := write[filepath.Join(g, "my-hooks")]; !strings.Contains(got, "core.hooksPath") {
		t.Errorf("core.hooksPath .git/my-hooks: %q", got)
	}
	for _, data := range []string{"objects", "refs", "index", "HEAD", "logs"} {
		for d := range write {
			if Within(filepath.Join(g, data), d) {
				t.Errorf(".git/%s is denied (by %s)", data, d)
			}
		}
	}

	// A .git that git would not use as it is stays protected, said.
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, ws string)
		note  string
	}{
		{"missing", func(t *testing.T, ws string) {}, "has no .git directory"},
		{"gitdir file", func(t *testing.T, ws string) {
			writeFile(t, ws+"/.git", "gitdir: ../elsewhere\n")
		}, "is not a git directory but a link or a gitdir file"},
		{"link", func(t *testing.T, ws string) {
			mkdirs(t, ws+"/../real.git")
			symlink(t, "../real.git", ws+"/.git")
		}, "is not a git directory but a link or a gitdir file"},
		{"commondir", func(t *testing.T, ws string) {
			mkdirs(t, ws+"/.git")
			writeFile(t, ws+"/.git/commondir", "../../other/.git\n")
		}, "has a commondir"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			tt.setup(t, e.ws)
			in := e.input(wsPolicy(e.ws))
			in.Changes = &Changes{GitCommit: "--allow-git-commit"}
			p := mustResolve(t, in)
			if len(p.Filesystem.GitDirs) != 0 {
				t.Errorf("git dirs: %+v", p.Filesystem.GitDirs)
			}
			if !strings.HasPrefix(deniedSources(p.Filesystem.WriteDenied)[filepath.Join(e.ws, ".git")], "protected_metadata") {
				t.Errorf(".git not denied: %+v", p.Filesystem.WriteDenied)
			}
			if !strings.Contains(strings.Join(p.Notes, "\n"), "--allow-git-commit: ") || !strings.Contains(strings.Join(p.Notes, "\n"), tt.note) {
				t.Errorf("notes %q lack %q", p.Notes, tt.note)
			}
		})
	}
}
