package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestWritableRootNotYetThere: VT Code grants fs_write on a directory a
// command is about to make (mkdir -p D && echo > D/f); macOS Seatbelt lets
// it. The run makes D (only D, below its existing parent), the command
// writes into it, nothing else appears in the parent, and D stays the
// user's. It reads what it wrote there, in a parent whose reads are
// granted entry by entry too (HOME: secrets that may appear lie beneath it,
// and the listing made at the decision cannot show D). A root whose parent
// is missing too stays an error.
func TestWritableRootNotYetThere(t *testing.T) {
	isoNeedRoot(t)
	for _, u := range []isoUser{isoRoot, isoNobody} {
		for _, mode := range fsModes {
			for _, where := range []string{"out", "home"} {
				t.Run(u.name+"/"+mode+"/"+where, func(t *testing.T) {
					w := isoWorkspace(t, u)
					parent := map[string]string{"out": w.out, "home": w.home}[where]
					d := filepath.Join(parent, "made-by-the-command")
					before := listing(t, parent)
					pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}, {"root": d}}})
					args := append(fsOpts(t, mode), "--sandbox-policy-cwd", w.root, "--sandbox-policy", pol, "--",
						"/bin/sh", "-c", `mkdir -p "$0" && echo written > "$0/f" && cat "$0/f"; touch "$1/other" 2>/dev/null && echo widened; true`, d, parent)
					r := run(t, runOpts{env: w.env(), dir: w.root, cred: u.cred}, args...)
					if mode == "landlock" {
						// Landlock alone cannot grant a root with protected
						// names (.git, ...) that do not exist, other than entry
						// by entry: an empty root is narrowed to nothing, and
						// --explain says so. The run starts all the same.
						if r.code != 0 || strings.Contains(r.stdout, "widened") {
							t.Fatalf("%v", r)
						}
						return
					}
					if r.code != 0 || r.stdout != "written\n" {
						t.Fatalf("the command could not make and write its directory: %v", r)
					}
					after := listing(t, parent)
					if want := append(slices.Clone(before), filepath.Base(d)); !slices.Equal(after, sorted(want)) {
						t.Errorf("the parent holds %v after the run, want %v (only the granted directory added)", after, sorted(want))
					}
					st, err := os.Stat(d)
					if err != nil || !st.IsDir() {
						t.Fatalf("the granted directory is not there after the run: %v", err)
					}
					if uid := fileUID(t, d); u.cred != nil && uid != int(u.cred.Uid) {
						t.Errorf("the granted directory belongs to uid %d, want the user's %d", uid, u.cred.Uid)
					}
				})
			}
		}
	}
	t.Run("parent missing", func(t *testing.T) {
		w := newWorkspace(t)
		d := filepath.Join(w.out, "no-such-parent", "d")
		pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": d}}})
		r := run(t, runOpts{env: w.env(), dir: w.root}, "--sandbox-policy", pol, "--", "/bin/true")
		if r.code != 125 || !strings.Contains(r.stderr, "writable_roots[0].root") {
			t.Errorf("%v: want exit 125 naming writable_roots[0].root", r)
		}
		if _, err := os.Stat(filepath.Dir(d)); err == nil {
			t.Errorf("the missing parent was made")
		}
	})
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func fileUID(t *testing.T, path string) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid)
}

// TestWritableRootNotADirectory: a file, /proc or /sys as a writable root is
// refused in the policy's words (the field and what is wrong), not with an
// internal path such as "mountns: /etc/passwd/.git: not a directory".
func TestWritableRootNotADirectory(t *testing.T) {
	w := newWorkspace(t)
	for _, tc := range []struct{ root, want string }{
		{"/etc/passwd", "writable_roots[0].root: /etc/passwd: not a directory"},
		{"/proc", "writable_roots[0].root: /proc: on procfs"},
		{"/sys/kernel", "writable_roots[0].root: /sys/kernel: on sysfs"},
	} {
		pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": tc.root}}})
		r := run(t, runOpts{env: w.env(), dir: w.root}, "--sandbox-policy", pol, "--", "/bin/true")
		if r.code != 125 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("root %s: %v; want exit 125 and one line with %q", tc.root, r, tc.want)
		}
	}
}
