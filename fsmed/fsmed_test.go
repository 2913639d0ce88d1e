package fsmed

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWhere: the walk up from a directory finds the split directory, a
// protected entry, an entry granted at the start, an entry made since, and
// a directory outside every split one.
func TestWhere(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git/hooks", "src/pkg", "tools/sub"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dirs := []Dir{{Path: root, Names: []string{".git", ".vtcode", "tools"}}, {Path: filepath.Join(root, "tools"), Names: []string{"fsmonitor.sh"}}}
	st := &state{split: map[key]*Dir{}, protected: map[key]bool{}, granted: map[key]bool{}}
	for i := range dirs {
		fd := open(t, dirs[i].Path)
		var s unix.Stat_t
		if err := unix.Fstat(fd, &s); err != nil {
			t.Fatal(err)
		}
		st.split[keyOf(&s)] = &dirs[i]
		st.entries(fd, &dirs[i])
		unix.Close(fd)
	}
	for k := range st.split {
		delete(st.protected, k)
	}
	// Made during the run: not granted.
	if err := os.MkdirAll(filepath.Join(root, "node_modules", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want place
	}{
		{root, top},
		{filepath.Join(root, "tools"), top},
		{filepath.Join(root, ".git"), protected},
		{filepath.Join(root, ".git", "hooks"), protected},
		{filepath.Join(root, "src", "pkg"), granted},
		{filepath.Join(root, "tools", "sub"), granted},
		{filepath.Join(root, "node_modules", "x"), managed},
		{filepath.Dir(root), outside},
		{"/", outside},
	} {
		fd := open(t, c.dir)
		got, _ := st.where(fd)
		unix.Close(fd)
		if got != c.want {
			t.Errorf("where(%s) = %d, want %d", c.dir, got, c.want)
		}
	}
	if !dirs[0].protects(".GIT") || !dirs[0].protects("tools") || dirs[0].protects("src") || dirs[0].protects(".gitignore") {
		t.Error("protects")
	}
	// An entry removed by the Mediator leaves the granted set.
	fd := open(t, root)
	st.forget(fd, "src")
	unix.Close(fd)
	fd = open(t, filepath.Join(root, "src", "pkg"))
	if got, _ := st.where(fd); got != managed {
		t.Errorf("after forget: %d, want managed", got)
	}
	unix.Close(fd)
}

func open(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestWrites: the opens the filter sends here are the ones that may
// create, truncate or write.
func TestWrites(t *testing.T) {
	for flags, want := range map[uint64]bool{
		unix.O_RDONLY: false, unix.O_RDONLY | unix.O_CLOEXEC | unix.O_DIRECTORY: false, unix.O_WRONLY: true,
		unix.O_RDWR: true, unix.O_RDONLY | unix.O_CREAT: true, unix.O_RDONLY | unix.O_TRUNC: true,
		unix.O_WRONLY | unix.O_TMPFILE: true, 3: false, // O_ACCMODE 3: neither read nor write
	} {
		if got := writes(flags); got != want {
			t.Errorf("writes(%#o) = %v, want %v", flags, got, want)
		}
	}
}
