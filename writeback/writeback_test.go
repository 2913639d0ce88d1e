package writeback

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMerge(t *testing.T) {
	up, dst := t.TempDir(), t.TempDir()
	mk := func(p, s string, mode os.FileMode) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(dst, "ab", "old"), "host", 0o644)
	mk(filepath.Join(up, "ab", "old"), "changed in the run", 0o644)
	mk(filepath.Join(up, "ab", "new"), "added", 0o4755)
	mk(filepath.Join(up, "cd", "deep", "new2"), "added too", 0o666)
	if err := os.Symlink("/etc/passwd", filepath.Join(up, "ab", "link")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dst, "escape")); err != nil {
		t.Fatal(err)
	}
	mk(filepath.Join(up, "escape", "planted"), "through a link", 0o644)
	ur, err := os.OpenRoot(up)
	if err != nil {
		t.Fatal(err)
	}
	dr, err := os.OpenRoot(dst)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Merge(ur, dr)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "ab", "old")); string(b) != "host" {
		t.Errorf("an existing entry was replaced: %q", b)
	}
	fi, err := os.Stat(filepath.Join(dst, "ab", "new"))
	if err != nil || fi.Mode().Perm() != 0o755 || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("the new file: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "cd", "deep", "new2")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the new nested file: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "ab", "link")); err == nil {
		t.Error("a link was written back")
	}
	if _, err := os.Lstat(filepath.Join(outside, "planted")); err == nil {
		t.Error("a write followed a link in the cache out of it")
	}
	if st.Files != 2 || st.Kept < 2 || st.Skipped != 1 {
		t.Errorf("stats: %+v", st)
	}
	ents, _ := os.ReadDir(filepath.Join(dst, "ab"))
	for _, e := range ents {
		if len(e.Name()) > 20 {
			t.Errorf("a temporary name was left: %s", e.Name())
		}
	}
}
