package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPlantedLinkRefused is the attack: run 1, with the workspace
// writable, plants a symlink to HOME in it; run 2 then names that link as
// its cwd (which becomes writable) or as a writable root. Run 2 must be
// refused before anything runs, naming the link, and HOME/.bashrc must be
// as it was. For root and an unprivileged user, in both filesystem modes.
func TestPlantedLinkRefused(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := isoWorkspace(t, u)
				bashrc := filepath.Join(w.home, ".bashrc")
				write(t, bashrc, "original\n")
				if u.cred != nil {
					_ = os.Lchown(bashrc, int(u.cred.Uid), int(u.cred.Gid))
				}
				// (In src: Landlock-only mode narrows the root's top level.)
				src := filepath.Join(w.root, "src")
				for _, name := range []string{"project", "link"} {
					r := isoRun(t, w, u, mode, runOpts{}, "/bin/ln", "-s", w.home, filepath.Join(src, name))
					if r.code != 0 {
						t.Fatalf("run 1 could not plant %s: %v", name, r)
					}
				}
				project, link := filepath.Join(src, "project"), filepath.Join(src, "link")
				// And one that anyone could have made: in /tmp itself.
				tmpLink := filepath.Join("/tmp", "se-planted-"+strconv.Itoa(os.Getpid())+"-"+u.name+"-"+mode)
				if err := os.Symlink(w.home, tmpLink); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(tmpLink) })
				for _, tt := range []struct {
					name string
					args []string
					want string
				}{
					{"cwd", []string{"--sandbox-policy-cwd", project, "--sandbox-policy", wsPolicy(t, w.root)},
						"sandbox-executable: --sandbox-policy-cwd: " + project + " is a symbolic link inside the writable root " + w.root + ", which a sandboxed program could have planted; refusing to follow it"},
					{"root", []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, link)},
						"sandbox-executable: --sandbox-policy: writable_roots[0].root: " + link + " is a symbolic link inside the writable root " + w.root + ", which a sandboxed program could have planted; refusing to follow it"},
					{"root in /tmp", []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, tmpLink)},
						"sandbox-executable: --sandbox-policy: writable_roots[0].root: " + tmpLink + " is a symbolic link in /tmp, a world-writable directory, where another user or a sandboxed program could have planted it; refusing to follow it"},
				} {
					args := append(append(tt.args, fsOpts(t, mode)...), "--", "/bin/sh", "-c", "echo pwned >> "+bashrc)
					r := run(t, runOpts{env: isoEnv(w), dir: "/", cred: u.cred}, args...)
					if r.code != 125 || r.stderr != tt.want+"\n" || r.stdout != "" {
						t.Errorf("%s: run 2: %v\nwant exit 125 and %q", tt.name, r, tt.want)
					}
					if got := readFile(t, bashrc); got != "original\n" {
						t.Errorf("%s: ~/.bashrc changed: %q", tt.name, got)
						write(t, bashrc, "original\n")
					}
				}
			})
		}
	}
}

// TestSystemLinkRootStillResolves: a link the program could not have made
// (here the system's /var/run -> /run) still resolves, and the Plan shows
// the canonical path.
func TestSystemLinkRootStillResolves(t *testing.T) {
	fi, err := os.Lstat("/var/run")
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Skip("/var/run is not a symbolic link here")
	}
	want, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		t.Fatal(err)
	}
	// (Not the cwd "/": as a writable root it would hold every link.)
	cwd := t.TempDir()
	r := run(t, runOpts{dir: cwd}, "--explain", "--sandbox-policy-cwd", cwd, "--sandbox-policy", wsPolicy(t, "/var/run"))
	if r.code != 0 {
		t.Fatalf("explain: %v", r)
	}
	var out struct {
		Plan struct {
			Filesystem struct {
				WritableRoots []struct{ Path, Given string } `json:"writable_roots"`
			} `json:"filesystem"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("explain output: %v\n%s", err, r.stdout)
	}
	roots := out.Plan.Filesystem.WritableRoots
	if len(roots) == 0 || roots[0].Path != want || roots[0].Given != "/var/run" {
		t.Fatalf("roots %+v, want %s given as /var/run\n%s", roots, want, strings.TrimSpace(r.stdout))
	}
}
