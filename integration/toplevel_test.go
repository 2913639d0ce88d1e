package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// topLevelScript works at the top level of the writable root it runs in,
// as builds do (new files, new trees, renames, links, removals), and tries
// every way to make, move, replace or write a protected name. It prints
// FAIL lines for what went wrong, then "done".
const topLevelScript = `
fail() { echo "FAIL: $*"; }
echo new > top.txt || fail "create a file at the top level"
echo more >> top.txt || fail "append to it"
[ "$(cat top.txt)" = "$(printf 'new\nmore')" ] || fail "its content"
mkdir -p build/out/deep && echo obj > build/out/deep/o.txt || fail "make a tree at the top level and write in it"
echo again > build/out/deep/o.txt && echo more >> build/out/deep/o.txt || fail "write again in the new tree"
mv top.txt moved.txt || fail "rename at the top level"
mv build built && [ -f built/out/deep/o.txt ] || fail "rename a new tree"
mv built/out/deep/o.txt src/ && mv src/o.txt . || fail "move between the new tree, a granted directory and the top level"
echo x > built/out/y && rm -r built || fail "remove a new tree"
mv src/main.c main.c && echo changed >> main.c && mv main.c src/main.c || fail "move a granted file to the top level and back"
ln -s moved.txt link && ln moved.txt hard && [ "$(cat link)" = "$(cat hard)" ] || fail "make links"
rm moved.txt link hard o.txt || fail "remove files"
mkdir d && rmdir d || fail "make and remove a directory"
echo keep > keep.txt || fail "the last file"
mkdir .vtcode 2>/dev/null && fail "made .vtcode"
echo x > .codex 2>/dev/null && fail "made .codex"
mkdir evil 2>/dev/null; mv evil .agents 2>/dev/null && fail "renamed a directory onto .agents"
rmdir evil 2>/dev/null
ln -s /tmp .agents 2>/dev/null && fail "made .agents a link"
echo x > .GIT 2>/dev/null && fail "made .GIT"
mv .git g 2>/dev/null && fail "moved .git away"
rm -rf .git 2>/dev/null
[ -f .git/config ] || fail "removed .git"
echo hook > .git/hooks/pre-commit 2>/dev/null && fail "wrote a hook"
mv keep.txt .git/keep 2>/dev/null && fail "moved a file into .git"
ln keep.txt .git/linked 2>/dev/null && fail "linked a file into .git"
mv .git/config cfg 2>/dev/null && fail "moved .git/config out"
echo out > "$1" 2>/dev/null && fail "wrote outside the root"
echo done
`

// TestLandlockOnlyTopLevel: in Landlock-only mode, a workspace whose .git
// exists (and whose .vtcode, .codex and .agents do not) keeps a writable
// top level (new files and trees, renames, links, removals) while no
// protected name can be made, moved, replaced or written, and nothing
// outside the root: as root and as nobody. Run again with SE_IT_WARM=1 for
// the warm path (the run's temp dir is in the root, so its recipe is
// stored).
func TestLandlockOnlyTopLevel(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		t.Run(u.name, func(t *testing.T) {
			w := newWorkspace(t)
			mustMkdir(t, filepath.Join(w.root, ".git", "hooks"))
			write(t, filepath.Join(w.root, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n")
			mustMkdir(t, filepath.Join(w.root, "tmp"))
			if u.cred != nil {
				w = isoWorkspace(t, u) // chowned copy
				mustMkdir(t, filepath.Join(w.root, ".git", "hooks"))
				write(t, filepath.Join(w.root, ".git", "config"), "[core]\n\trepositoryformatversion = 0\n")
				mustMkdir(t, filepath.Join(w.root, "tmp"))
				for _, p := range []string{".git", ".git/hooks", ".git/config", "tmp"} {
					_ = os.Lchown(filepath.Join(w.root, p), int(u.cred.Uid), int(u.cred.Gid))
				}
			}
			// Listed by the decision: an hour old, so that the warm
			// path trusts the listing (a directory changed moments ago
			// could change again with the same time stamp).
			past := time.Now().Add(-time.Hour)
			if err := os.Chtimes(w.root, past, past); err != nil {
				t.Fatal(err)
			}
			outside := filepath.Join(w.out, "written")
			r := isoRun(t, w, u, "landlock", runOpts{env: []string{"TMPDIR=" + filepath.Join(w.root, "tmp")}},
				"/bin/sh", "-c", topLevelScript, "sh", outside)
			if r.code != 0 || strings.Contains(r.stdout, "FAIL") || !strings.Contains(r.stdout, "done") {
				t.Fatalf("the top level in Landlock-only mode: %v", r)
			}
			for _, name := range []string{".vtcode", ".codex", ".agents", ".GIT", "g", "cfg"} {
				if _, err := os.Lstat(filepath.Join(w.root, name)); err == nil && !(name == ".GIT" && sameFile(w.root, ".GIT", ".git")) {
					t.Errorf("%s exists after the run", name)
				}
			}
			for _, p := range []string{".git/hooks/pre-commit", ".git/keep", ".git/linked"} {
				if _, err := os.Lstat(filepath.Join(w.root, p)); err == nil {
					t.Errorf("%s exists after the run", p)
				}
			}
			if got := readFile(t, filepath.Join(w.root, "keep.txt")); got != "keep\n" {
				t.Errorf("keep.txt: %q", got)
			}
			if got := readFile(t, filepath.Join(w.root, "src", "main.c")); !strings.HasSuffix(got, "changed\n") {
				t.Errorf("src/main.c: %q", got)
			}
			if _, err := os.Stat(outside); err == nil {
				t.Error("the write outside the root landed")
			}
		})
	}
}

// sameFile reports whether a and b in dir are one file (a case-folding
// directory).
func sameFile(dir, a, b string) bool {
	x, err1 := os.Stat(filepath.Join(dir, a))
	y, err2 := os.Stat(filepath.Join(dir, b))
	return err1 == nil && err2 == nil && os.SameFile(x, y)
}

// TestFullTableMakesNoFile: an open that would make a file the supervisor
// makes for the program (the top level of a split root, .git with
// --allow-git-commit), when the program's descriptor table is full, fails
// with EMFILE and leaves no file, as the kernel's own open does (it takes
// the descriptor first): the same O_EXCL open succeeds once a descriptor
// is free, as git's index.lock must. Both modes, root and nobody (with
// -short, each user one mode).
func TestFullTableMakesNoFile(t *testing.T) {
	users := isoAnyUser(t)
	for i, u := range users {
		for _, mode := range shortLayouts(i, len(users), fsModes...) {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := newWorkspace(t)
				gitRepo(t, w)
				chownTree(w, u)
				script := `P=` + probe + `
for p in top.new .git/index.lock; do
	(ulimit -n 3; exec "$P" create "$p")
	[ -e "$p" ] && echo "left $p"
	"$P" create "$p"
done`
				r := gitCommitRun(t, w, u, mode, "off", []string{"--allow-git-commit"}, script)
				if want := "errno24\nok\nerrno24\nok\n"; r.code != 0 || r.stdout != want {
					t.Fatalf("want %q: %v", want, r)
				}
			})
		}
	}
}

// TestTopLevelFIFOIsTheProgramsToOpen: in Landlock-only mode an open for
// writing and a truncate at a split root's top level go to the
// supervisor, which must not open a FIFO (or a device) there itself: its
// open and close of a FIFO a reader waits on gave that reader an end of
// file, and the program's own open then waited for ever for a reader.
// Such a file is the kernel's to open or refuse, as the program.
func TestTopLevelFIFOIsTheProgramsToOpen(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		t.Run(u.name, func(t *testing.T) {
			w := isoWorkspace(t, u)
			fifo := filepath.Join(w.root, "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			chownTree(w, u)
			// The reader is waiting in its open before the writer opens.
			for _, first := range []string{"", probe + " truncate fifo; "} {
				script := `timeout 20 sh -c 'cat fifo > out.txt & sleep 0.3; ` + first + `echo hello > fifo; wait'; echo "rc=$?"; cat out.txt`
				r := isoRun(t, w, u, "landlock", runOpts{}, "/bin/sh", "-c", script)
				want := "rc=0\nhello\n"
				if first != "" {
					want = "EINVAL\n" + want // not a regular file
				}
				if r.code != 0 || r.stdout != want {
					t.Errorf("%s: want %q: %v", script, want, r)
				}
			}
		})
	}
}
