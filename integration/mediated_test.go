package integration

import (
	bin "encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLinkThroughASymlinkTakesNoProtectedFile: a hard link the supervisor
// makes for the program at a split root's top level (Landlock-only mode;
// .git with --allow-git-commit in both modes) never follows a symbolic
// link. Following one, `ln -s .git/config l; ln -L l cfg` gave the program
// a writable second name for .git/config (and for any file it cannot
// write), since the mediating thread's own rights cover the whole root.
// The link is the kernel's to refuse, as the program's.
func TestLinkThroughASymlinkTakesNoProtectedFile(t *testing.T) {
	script := `P=` + probe + `
ln -s .git/config l && ln -L l cfg 2>/dev/null && echo "linked .git/config as cfg"
printf '[core]\n\tfsmonitor = evil\n' >> cfg 2>/dev/null
ln -s config .git/l 2>/dev/null
(cd .git && ln -L l cfg2 2>/dev/null && echo "linked .git/config as .git/cfg2")
echo done`
	users := isoAnyUser(t)
	type layout struct{ mode, flag string }
	layouts := []layout{{"landlock", ""}, {"landlock", "--allow-git-commit"}, {"exact", "--allow-git-commit"}}
	for _, u := range users {
		for _, l := range layouts {
			t.Run(u.name+"/"+l.mode+l.flag, func(t *testing.T) {
				w := newWorkspace(t)
				gitRepo(t, w)
				chownTree(w, u)
				var flags []string
				if l.flag != "" {
					flags = append(flags, l.flag)
				}
				r := gitCommitRun(t, w, u, l.mode, "off", flags, script)
				if r.code != 0 || r.stdout != "done\n" {
					t.Errorf("want only done: %v", r)
				}
				cfg := filepath.Join(w.root, ".git", "config")
				var st syscall.Stat_t
				if err := syscall.Stat(cfg, &st); err != nil {
					t.Fatal(err)
				}
				if st.Nlink != 1 {
					t.Errorf(".git/config has %d names after the run", st.Nlink)
				}
				if got := readFile(t, cfg); strings.Contains(got, "evil") {
					t.Errorf(".git/config was written: %q", got)
				}
			})
		}
	}
}

// TestProtectedNameMadeDuringTheRunIsProtected: in Landlock-only mode, a
// protected name that appears at a split root's top level while the
// program runs (a host `git init`, another run's placeholder) is as
// protected as one that was there at the start: the program cannot write
// beneath it. The supervisor took an entry it had not seen at its first
// call for one the program had made, and wrote beneath it for the program.
func TestProtectedNameMadeDuringTheRunIsProtected(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		t.Run(u.name, func(t *testing.T) {
			w := isoWorkspace(t, u)
			chownTree(w, u)
			// The program makes a file first (the supervisor's first
			// call), says it is ready, and waits (a minute at most) for
			// the test to make .git/hooks and .vtcode.
			script := `echo x > first.txt && echo > ready
i=0; while [ ! -d .git/hooks ] || [ ! -d .vtcode ]; do i=$((i+1)); [ $i -gt 1200 ] && echo "gave up" && exit 1; sleep 0.05; done
echo hook > .git/hooks/pre-commit 2>/dev/null && echo "wrote a hook"
echo cfg > .git/config 2>/dev/null && echo "wrote .git/config"
echo s > .vtcode/settings.toml 2>/dev/null && echo "wrote .vtcode/settings.toml"
mkdir .vtcode/d 2>/dev/null && echo "made .vtcode/d"
echo done`
			done := make(chan result, 1)
			go func() {
				done <- isoRun(t, w, u, "landlock", runOpts{}, "/bin/sh", "-c", script)
			}()
			ready := filepath.Join(w.root, "ready")
			for {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				select {
				case r := <-done:
					t.Fatalf("the program ended before it was ready: %v", r)
				case <-time.After(50 * time.Millisecond):
				}
			}
			for _, d := range []string{".git/hooks", ".vtcode"} {
				if err := os.MkdirAll(filepath.Join(w.root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if u.cred != nil {
				for _, p := range []string{".git", ".git/hooks", ".vtcode"} {
					_ = os.Lchown(filepath.Join(w.root, p), int(u.cred.Uid), int(u.cred.Gid))
				}
			}
			r := <-done
			if r.code != 0 || r.stdout != "done\n" {
				t.Errorf("want only done: %v", r)
			}
			for _, p := range []string{".git/hooks/pre-commit", ".git/config", ".vtcode/settings.toml", ".vtcode/d"} {
				if _, err := os.Lstat(filepath.Join(w.root, p)); err == nil {
					t.Errorf("%s exists after the run", p)
				}
			}
		})
	}
}

// TestTakenProtectedNameIsEEXIST: making a protected name that exists
// (mkdir .git, an O_EXCL create, a symbolic or hard link onto it) fails
// with EEXIST in both modes, as the kernel answers before it checks rights:
// tools that make a directory unless it exists (node's mkdirSync with
// recursive, Python's makedirs) take EEXIST as "there" and failed on the
// EACCES Landlock-only mode gave.
func TestTakenProtectedNameIsEEXIST(t *testing.T) {
	users := isoAnyUser(t)
	for i, u := range users {
		for _, mode := range shortLayouts(i, len(users), fsModes...) {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := newWorkspace(t)
				gitRepo(t, w)
				chownTree(w, u)
				script := `P=` + probe + `
echo x > top.txt
for op in "mkdir .git" "create .git" "symlink top.txt .git" "link top.txt .git"; do "$P" $op; done
echo done`
				r := gitCommitRun(t, w, u, mode, "off", nil, script)
				if want := strings.Repeat("EEXIST\n", 4) + "done\n"; r.code != 0 || r.stdout != want {
					t.Errorf("want %q: %v", want, r)
				}
			})
		}
	}
}

// TestEntriesMadeForTheProgramGetTheKernelsModes: a directory, file or
// FIFO the supervisor makes at a split root's top level (Landlock-only
// mode) gets the mode the kernel gives one the program makes: a
// directory keeps the set-group-ID bit of its parent, and where the parent
// has a default ACL the ACL applies instead of the umask. The supervisor
// took the program's umask away itself and then chmod'ed, which cleared
// the bit and put the umask over the ACL. Both modes, root and nobody.
func TestEntriesMadeForTheProgramGetTheKernelsModes(t *testing.T) {
	// A default ACL of user::rwx, group::rwx, other::r-x, as
	// system.posix_acl_default holds it: a version, then (tag, perm, id)
	// entries in the order of their tags.
	acl := []byte{2, 0, 0, 0}
	for _, e := range [][2]uint16{{0x01, 7}, {0x04, 7}, {0x20, 5}} {
		acl = bin.LittleEndian.AppendUint16(acl, e[0])
		acl = bin.LittleEndian.AppendUint16(acl, e[1])
		acl = bin.LittleEndian.AppendUint32(acl, 0xffffffff)
	}
	cases := []struct {
		name, umask, want string
		set               func(t *testing.T, dir string)
	}{
		{"setgid", "002", "2775 d\n664 f\n664 p\n", func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o2775|os.ModeSetgid); err != nil {
				t.Fatal(err)
			}
		}},
		{"acl", "077", "775 d\n664 f\n664 p\n", func(t *testing.T, dir string) {
			if err := syscall.Setxattr(dir, "system.posix_acl_default", acl, 0); err == syscall.EOPNOTSUPP {
				t.Skipf("%s: no POSIX ACLs on its filesystem", dir)
			} else if err != nil {
				t.Fatal(err)
			}
		}},
	}
	users := isoAnyUser(t)
	for i, u := range users {
		for _, mode := range shortLayouts(i, len(users), fsModes...) {
			for _, c := range cases {
				t.Run(u.name+"/"+mode+"/"+c.name, func(t *testing.T) {
					w := newWorkspace(t)
					gitRepo(t, w)
					chownTree(w, u)
					c.set(t, w.root)
					script := "umask " + c.umask + "; mkdir d && echo x > f && mkfifo p && stat -c '%a %n' d f p"
					r := gitCommitRun(t, w, u, mode, "off", nil, script)
					if r.code != 0 || r.stdout != c.want {
						t.Errorf("want %q: %v", c.want, r)
					}
				})
			}
		}
	}
}
