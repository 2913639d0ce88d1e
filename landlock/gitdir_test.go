package landlock

import (
	"path/filepath"
	"slices"
	"testing"

	"sandbox-executable/policy"
)

// TestWritableGitDirWithholdsLinks: in both modes, a writable git
// directory (--allow-git-commit) is split with the root above it; beneath
// it every rule withholds links, FIFOs, sockets and moves (GitWithheld),
// the entries git runs or loads get none, and the rest of the root keeps
// every right; the split directories say which lie in the git directory.
func TestWritableGitDirWithholdsLinks(t *testing.T) {
	base := tree(t, "ws/.git/config", "ws/.git/hooks/", "ws/.git/objects/ab/", "ws/.git/refs/heads/main", "ws/.git/HEAD", "ws/src/main.c", "ws/README")
	ws := filepath.Join(base, "ws")
	g := filepath.Join(ws, ".git")
	for _, exact := range []bool{true, false} {
		denied := []string{filepath.Join(g, "config"), filepath.Join(g, "hooks"), filepath.Join(g, "commondir"), filepath.Join(ws, ".codex")}
		p := plan([]string{ws}, nil, denied)
		p.Filesystem.GitDirs = []policy.GitDir{{Path: g, Root: ws, From: "--allow-git-commit"}}
		opt := Options{ABI: 7, Exact: exact}
		if exact {
			opt.LateWriteDenied = denied // as mountns leaves them
		}
		s := Compute(p, opt)
		all := writeRights
		for _, c := range []struct {
			path string
			want AccessFS
		}{
			{filepath.Join(ws, "src", "main.c"), all},
			{filepath.Join(ws, "src"), all},
			{filepath.Join(g, "objects", "ab"), all &^ GitWithheld},
			{filepath.Join(g, "refs", "heads", "main"), all &^ GitWithheld},
			{filepath.Join(g, "HEAD"), all &^ GitWithheld},
			{filepath.Join(g, "config"), 0},
			{filepath.Join(g, "hooks"), 0},
			{filepath.Join(g, "commondir"), 0},
			{g, 0},
			{ws, 0},
		} {
			if got := grants(s, c.path) & all; got != c.want {
				t.Errorf("exact %v: %s: %s, want %s", exact, c.path, got, c.want)
			}
		}
		splits := map[string]Split{}
		for _, sp := range s.WriteSplits {
			splits[sp.Dir] = sp
		}
		if sp, ok := splits[ws]; !ok || sp.Git || !slices.Equal(sp.Names, []string{".codex", ".git"}) {
			t.Errorf("exact %v: the root's split: %+v", exact, sp)
		}
		if sp, ok := splits[g]; !ok || !sp.Git || !slices.Equal(sp.Names, []string{"commondir", "config", "hooks"}) {
			t.Errorf("exact %v: the git directory's split: %+v", exact, sp)
		}
	}
}

// TestExactModeWithoutGitDirsGrantsRoots: without a writable git
// directory exact mode still grants each root whole (the mounts deny).
func TestExactModeWithoutGitDirsGrantsRoots(t *testing.T) {
	base := tree(t, "ws/.git/config", "ws/src/main.c")
	ws := filepath.Join(base, "ws")
	s := Compute(plan([]string{ws}, nil, []string{filepath.Join(ws, ".git")}), Options{ABI: 7, Exact: true})
	if len(s.WriteSplits) != 0 || grants(s, ws)&MakeSym == 0 {
		t.Errorf("splits %+v, root %s", s.WriteSplits, grants(s, ws))
	}
}
