package fsdeps

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// linkTree makes a tree with relative, absolute, chained, dangling and
// looping links, a file in the middle of paths and ".." after links.
func linkTree(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(d, name)); err != nil {
			t.Fatal(err)
		}
	}
	mk("a/b/c")
	mk("x/y")
	if err := os.WriteFile(filepath.Join(d, "a/file"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln("a/b", "rel")                 // relative
	ln(filepath.Join(d, "x"), "abs") // absolute
	ln("rel", "chain1")              // chained: chain1 -> rel -> a/b
	ln("chain1/c", "chain2")
	ln("missing/nowhere", "dangling")
	ln("loop2", "loop1")
	ln("loop1", "loop2")
	ln("../../x", "a/b/up")     // ".." inside a link
	ln("../a/file", "x/tofile") // a link to a file
	ln(".", "a/dot")            // a link to its own directory
	ln("/", "a/root")           // to /
	ln("y/../../a", "x/back")   // ".." after a real directory
	ln("abs/y", "a/b/c/deep")   // relative link through an absolute one (resolved from a/b/c: dangling)
	ln(filepath.Join(d, "abs/y"), "a/b/c/deepabs")
	return d
}

func TestEvalSymlinksAsFilepath(t *testing.T) {
	d := linkTree(t)
	paths := []string{
		"", "/", ".", "a", "a/b/c", "rel", "rel/c", "abs", "abs/y", "chain1", "chain2", "chain2/", "dangling", "dangling/x",
		"loop1", "loop1/x", "a/b/up", "a/b/up/y", "x/tofile", "x/tofile/z", "a/file/..", "a/dot/dot/dot/b", "a/root/tmp",
		"x/back/b/c", "a/b/c/deep", "a/b/c/deepabs", "rel/../x", "chain1/../a/file", "abs/../a", "a//b///c/", "./rel/./c",
		"nothere", "a/nothere/..", "../" + filepath.Base(d) + "/rel",
	}
	check := func(p string) {
		t.Helper()
		want, werr := filepath.EvalSymlinks(p)
		got, gerr := EvalSymlinks(p)
		if got != want || (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Errorf("EvalSymlinks(%q) = %q, %v; filepath.EvalSymlinks: %q, %v", p, got, gerr, want, werr)
		}
	}
	for _, p := range paths {
		check(filepath.Join(d, p)) // absolute
	}
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(d); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		check(p) // relative
	}
}

func TestRecordsDeduplicatedAndConflictsTaint(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	d := t.TempDir()
	p := filepath.Join(d, "f")
	Lstat(p)
	Lstat(p)
	if n := len(Deps()); n != 1 {
		t.Fatalf("the same lstat twice with the same answer: %d deps, want 1", n)
	}
	if len(Tainted()) != 0 {
		t.Fatalf("tainted: %v", Tainted())
	}
	os.WriteFile(p, nil, 0o600)
	Lstat(p)
	deps := Deps()
	if len(deps) != 2 || deps[0].Errno != unix.ENOENT || deps[1].Errno != 0 {
		t.Fatalf("deps %+v", deps)
	}
	if tt := Tainted(); len(tt) != 1 || !strings.Contains(tt[0], "two answers") {
		t.Fatalf("a call with two answers must taint: %v", tt)
	}
}

func TestErrorsAsOS(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	d := t.TempDir()
	missing := filepath.Join(d, "missing")
	_, err := Lstat(missing)
	_, oerr := os.Lstat(missing)
	if err.Error() != oerr.Error() || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lstat: %v, os: %v", err, oerr)
	}
	_, err = Stat(missing)
	_, oerr = os.Stat(missing)
	if err.Error() != oerr.Error() {
		t.Errorf("Stat: %v, os: %v", err, oerr)
	}
	_, err = Readlink(missing)
	_, oerr = os.Readlink(missing)
	if err.Error() != oerr.Error() {
		t.Errorf("Readlink: %v, os: %v", err, oerr)
	}
	_, err = ReadFile(missing)
	_, oerr = os.ReadFile(missing)
	if err.Error() != oerr.Error() {
		t.Errorf("ReadFile: %v, os: %v", err, oerr)
	}
	_, err = ReadDir(missing)
	_, oerr = os.ReadDir(missing)
	if err.Error() != oerr.Error() {
		t.Errorf("ReadDir: %v, os: %v", err, oerr)
	}
	f := filepath.Join(d, "file")
	os.WriteFile(f, []byte("x"), 0o600)
	_, err = ReadDir(f)
	_, oerr = os.ReadDir(f)
	if err == nil || err.Error() != oerr.Error() {
		t.Errorf("ReadDir of a file: %v, os: %v", err, oerr)
	}
	for _, dep := range Deps() {
		if dep.Kind == KindReadDir && dep.Path == f && dep.Errno != unix.ENOTDIR {
			t.Errorf("ReadDir of a file recorded as %v", dep.Errno)
		}
	}
}

func TestInfoAsOS(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{d, "/dev/null", "/", "/tmp", "/proc/self"} {
		fi, err := Lstat(p)
		ofi, oerr := os.Lstat(p)
		if err != nil || oerr != nil {
			t.Fatal(err, oerr)
		}
		if fi.Mode() != ofi.Mode() || fi.IsDir() != ofi.IsDir() {
			t.Errorf("%s: mode %v, os %v", p, fi.Mode(), ofi.Mode())
		}
	}
}

func TestReadDirSortedAsOS(t *testing.T) {
	d := t.TempDir()
	for _, n := range []string{"b", "a", "c"} {
		os.WriteFile(filepath.Join(d, n), nil, 0o600)
	}
	os.Mkdir(filepath.Join(d, "dir"), 0o700)
	os.Symlink("a", filepath.Join(d, "link"))
	got, err := ReadDir(d)
	want, _ := os.ReadDir(d)
	if err != nil || len(got) != len(want) {
		t.Fatal(err, got, want)
	}
	for i := range got {
		if got[i].Name() != want[i].Name() || got[i].Type() != want[i].Type() {
			t.Errorf("entry %d: %s %v, os %s %v", i, got[i].Name(), got[i].Type(), want[i].Name(), want[i].Type())
		}
	}
}

func TestProcessSpecificNotRecorded(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	if _, err := ReadFile("/proc/self/status"); err != nil {
		t.Fatal(err)
	}
	if _, err := Readlink("/proc/self/exe"); err != nil {
		t.Fatal(err)
	}
	Stat("/proc/1/environ")
	if len(Deps()) != 0 {
		t.Errorf("process-specific reads recorded: %v", Deps())
	}
	if n := len(Tainted()); n != 3 {
		t.Errorf("each process-specific read taints: %v", Tainted())
	}
	Reset()
	if _, err := ReadFile("/proc/self/mountinfo"); err != nil {
		t.Fatal(err)
	}
	deps := Deps()
	if len(deps) != 1 || deps[0].Kind != KindFileContent || len(Tainted()) != 0 {
		t.Errorf("mountinfo must be recorded by content: %v %v", deps, Tainted())
	}
	Reset()
	if _, err := ReadProcSelf("/proc/self/status", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProcSelf("/proc/sys/kernel/osrelease", "test"); err == nil {
		t.Error("ReadProcSelf read a file that is not this process's")
	}
	if _, err := ReadProcSelf("/proc/self/../1/status", "test"); err == nil {
		t.Error("ReadProcSelf read a path that leaves /proc/self")
	}
	if len(Deps()) != 0 || len(Tainted()) != 0 || len(ProcSelfReads()) != 1 {
		t.Errorf("ReadProcSelf: deps %v, taints %v, reads %v", Deps(), Tainted(), ProcSelfReads())
	}
}

func TestKernelFilesByContent(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	b, err := ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	ReadFile("/proc/sys/kernel/no-such-sysctl")
	deps := Deps()
	if len(deps) != 2 || deps[0].Kind != KindFileContent || deps[0].Data != string(b) || deps[1].Errno != unix.ENOENT {
		t.Fatalf("deps %+v", deps)
	}
}

func TestPipeTaints(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.Write([]byte("{}"))
	w.Close()
	// A path that does not say it is this process's: only the file it
	// opens does.
	d := t.TempDir()
	link := filepath.Join(d, "fd")
	os.Symlink("/proc/self/fd/"+itoa(int(r.Fd())), link)
	b, err := ReadFile(link)
	if err != nil || string(b) != "{}" {
		t.Fatal(b, err)
	}
	if len(Tainted()) == 0 {
		t.Error("a pipe read must taint")
	}
	for _, d := range Deps() {
		if d.Kind == KindFileMeta || d.Kind == KindFileContent {
			t.Errorf("a pipe read recorded: %v", d)
		}
	}
}

func TestRacyTaints(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	d := t.TempDir()
	p := filepath.Join(d, "f")
	os.WriteFile(p, []byte("x"), 0o600)
	ReadFile(p) // just written: its times are within the window
	if len(Tainted()) == 0 {
		t.Error("a file written just before it was read must taint")
	}
	for _, d := range Deps() {
		if d.Kind == KindFileMeta {
			t.Errorf("racy read recorded: %v", d)
		}
	}
}

// TestEncodeRefuses: what the format cannot hold is refused by the writer
// (the C verifier, its reader, is tested in spawn).
func TestEncodeRefuses(t *testing.T) {
	b, err := Encode([]Dep{{Kind: KindStat, Path: "/b", Errno: unix.ENOENT}})
	if err != nil || len(b) != headerSize+12+2 || binary.LittleEndian.Uint32(b) != Magic || binary.LittleEndian.Uint32(b[12:]) != uint32(len(b)) {
		t.Fatalf("encoding %x, %v", b, err)
	}
	if _, err := Encode([]Dep{{Kind: KindStat, Path: "a\x00b"}}); err == nil {
		t.Error("a path with a NUL encoded")
	}
	if _, err := Encode([]Dep{{Kind: KindReadDir, Flags: FlagCtime, Path: "/"}}); err == nil {
		t.Error("a flag another kind's encoded")
	}
}

// TestWholeSecondTimesTaint: a time of a whole second may come from a
// filesystem that keeps whole seconds, where a later change in the same
// second keeps it: within two seconds of the read, it taints.
func TestWholeSecondTimesTaint(t *testing.T) {
	d := t.TempDir()
	sub := filepath.Join(d, "sub")
	os.Mkdir(sub, 0o755)
	for _, c := range []struct {
		ago   time.Duration // before now, then truncated to the second
		taint bool
	}{{0, true}, {5 * time.Second, false}} {
		Reset()
		when := time.Now().Add(-c.ago).Truncate(time.Second)
		if err := os.Chtimes(sub, when, when); err != nil {
			t.Fatal(err)
		}
		ReadDir(sub)
		if c.taint && time.Since(when) >= 2*time.Second {
			// A busy machine took the read out of the window: the
			// case says nothing then.
			t.Logf("the read came %v after the time set; not judged", time.Since(when))
			continue
		}
		if got := len(Tainted()) > 0; got != c.taint {
			t.Errorf("a directory's mtime a whole second %v ago: tainted %v (%v), want %v", c.ago, got, Tainted(), c.taint)
		} else if got && !strings.Contains(Tainted()[0], "of the decision, a whole-second time") {
			t.Errorf("the taint does not say why: %v", Tainted())
		}
	}
	Reset()
}

// TestKernelListingsTaint: a directory of /proc or sysfs keeps
// its mtime while its entries come and go: listing one taints.
func TestKernelListingsTaint(t *testing.T) {
	for _, d := range []string{"/proc", "/sys/kernel"} {
		Reset()
		if _, err := ReadDir(d); err != nil {
			t.Skip(err)
		}
		if len(Tainted()) == 0 || len(Deps()) != 0 {
			t.Errorf("listing %s: taints %v, deps %v", d, Tainted(), Deps())
		}
	}
	Reset()
}

// TestUnstableNamesAPathThatWasTwoThings: within a round (Begin), an
// lstat of one path that gives two answers (a directory, then a link put
// in its place) is named by Unstable, and a new round starts clean; a
// listing that changed is not (it only narrows what the decision grants).
func TestUnstableNamesAPathThatWasTwoThings(t *testing.T) {
	t.Cleanup(Reset)
	d := t.TempDir()
	p := filepath.Join(d, "x")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	Begin()
	_, _ = Lstat(p)
	_, _ = ReadDir(d)
	if u := Unstable(); len(u) != 0 {
		t.Fatalf("one answer each: %v", u)
	}
	if err := os.Rename(p, p+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", p); err != nil {
		t.Fatal(err)
	}
	_, _ = Lstat(p)
	_, _ = ReadDir(d)
	if u := Unstable(); len(u) != 1 || !strings.Contains(u[0], p) {
		t.Errorf("a directory, then a link: %v", u)
	}
	Begin()
	if u := Unstable(); len(u) != 0 {
		t.Errorf("a new round: %v", u)
	}
}
