package fsmed

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGitRefusal: in a writable git directory the Mediator makes no
// symbolic link, FIFO, socket or device, and renames or links nothing
// between directories when either side lies in it (beneath an entry
// granted at the start included); elsewhere it refuses none of these.
func TestGitRefusal(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git/logs", "src"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws := &Dir{Path: root, Names: []string{".git"}}
	git := &Dir{Path: filepath.Join(root, ".git"), Names: []string{"config", "hooks"}, Git: true}
	mk := func(dir string, p place, d *Dir) *side {
		return &side{parent: open(t, filepath.Join(root, dir)), place: p, dir: d}
	}
	gitTop, gitTop2 := mk(".git", top, git), mk(".git", top, git)
	gitManaged := mk(".git/logs", managed, git)
	gitGranted := mk(".git/logs", granted, git)
	wsTop, wsGranted := mk("", top, ws), mk("src", granted, ws)
	for _, s := range []*side{gitTop, gitTop2, gitManaged, gitGranted, wsTop, wsGranted} {
		defer s.close()
	}
	for _, c := range []struct {
		name  string
		cl    call
		sides []*side
		want  unix.Errno
	}{
		{"symlink at the top of .git", call{op: opSymlink}, []*side{gitTop}, unix.EACCES},
		{"symlink beneath an entry made in .git", call{op: opSymlink}, []*side{gitManaged}, unix.EACCES},
		{"symlink at the root's top", call{op: opSymlink}, []*side{wsTop}, 0},
		{"FIFO in .git", call{op: opMknod, mode: unix.S_IFIFO | 0o644}, []*side{gitTop}, unix.EACCES},
		{"socket in .git", call{op: opMknod, mode: unix.S_IFSOCK | 0o644}, []*side{gitTop}, unix.EACCES},
		{"regular file by mknod in .git", call{op: opMknod, mode: unix.S_IFREG | 0o644}, []*side{gitTop}, 0},
		{"FIFO at the root's top", call{op: opMknod, mode: unix.S_IFIFO | 0o644}, []*side{wsTop}, 0},
		{"rename within .git's top (index.lock to index)", call{op: opRename}, []*side{gitTop, gitTop2}, 0},
		{"rename from the root into .git", call{op: opRename}, []*side{wsTop, gitTop}, unix.EXDEV},
		{"rename from the root into .git/logs", call{op: opRename}, []*side{wsTop, gitGranted}, unix.EXDEV},
		{"rename out of .git", call{op: opRename}, []*side{gitManaged, wsGranted}, unix.EXDEV},
		{"rename between .git's directories", call{op: opRename}, []*side{gitTop, gitManaged}, unix.EXDEV},
		{"link into .git", call{op: opLink}, []*side{wsGranted, gitTop}, unix.EXDEV},
		{"rename outside .git", call{op: opRename}, []*side{wsTop, wsGranted}, 0},
	} {
		if got, why := gitRefusal(c.cl, c.sides); got != c.want || (got != 0) != (why != "") {
			t.Errorf("%s: %v %q, want %v", c.name, got, why, c.want)
		}
	}
}
