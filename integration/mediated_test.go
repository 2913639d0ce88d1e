package integration

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
