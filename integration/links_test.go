package integration

import (
	"encoding/json"
	"os"
	"os/exec"
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

// chownTree gives w's trees to u (after a setup made as root).
func chownTree(w *workspace, u isoUser) {
	if u.cred == nil {
		return
	}
	for _, p := range []string{w.root, w.home, w.out} {
		_ = filepath.Walk(p, func(q string, _ os.FileInfo, _ error) error {
			return os.Lchown(q, int(u.cred.Uid), int(u.cred.Gid))
		})
	}
}

// gitIn runs git in dir.
func gitIn(t *testing.T, w *workspace, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+w.home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestHooksOutsideGitUnwritable: where git runs hooks from a directory
// outside .git (core.hooksPath, existing or not yet; a .git/hooks symlink
// into the workspace), the program can neither change a hook nor create
// one, while the rest of the workspace stays writable. For root and an
// unprivileged user, in both filesystem modes (with -short, the users share
// the layouts out: shortLayouts).
func TestHooksOutsideGitUnwritable(t *testing.T) {
	users := isoAnyUser(t)
	for i, u := range users {
		for _, mode := range fsModes {
			for _, layout := range shortLayouts(i, len(users), "hooksPath existing", "hooksPath missing", "hooks symlink") {
				t.Run(u.name+"/"+mode+"/"+layout, func(t *testing.T) {
					w := newWorkspace(t)
					gitRepo(t, w)
					var hooks string
					switch layout {
					case "hooksPath existing":
						hooks = filepath.Join(w.root, ".githooks")
						gitIn(t, w, w.root, "config", "core.hooksPath", ".githooks")
						mustMkdir(t, hooks)
						write(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\nexit 0\n")
					case "hooksPath missing":
						// (In an existing directory: Landlock-only mode
						// stops creating entries at the root's top level
						// anyway.)
						mustMkdir(t, filepath.Join(w.root, "scripts"))
						hooks = filepath.Join(w.root, "scripts", "git-hooks")
						gitIn(t, w, w.root, "config", "core.hooksPath", "scripts/git-hooks")
					case "hooks symlink":
						hooks = filepath.Join(w.root, "hooks-dir")
						mustMkdir(t, hooks)
						write(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\nexit 0\n")
						if err := os.RemoveAll(filepath.Join(w.root, ".git", "hooks")); err != nil {
							t.Fatal(err)
						}
						if err := os.Symlink("../hooks-dir", filepath.Join(w.root, ".git", "hooks")); err != nil {
							t.Fatal(err)
						}
					}
					chownTree(w, u)
					before := gitState(t, w) + treeState(t, hooks)
					scripts := []string{
						`mkdir -p "$H" && printf '#!/bin/sh\necho pwned\n' > "$H/post-commit"`,
						`mkdir -p "$H" && echo 'echo pwned' >> "$H/pre-commit"`,
						`mkdir -p "$H" && ln -s /tmp "$H/post-checkout"`,
					}
					if layout != "hooksPath missing" {
						scripts = append(scripts, `rm -rf "$H"; test ! -e "$H"`, `mv "$H" "$H.old"`)
					}
					for _, script := range scripts {
						r := isoRun(t, w, u, mode, runOpts{}, "/bin/sh", "-c", "H="+hooks+"; "+script)
						if r.code == 0 {
							t.Errorf("%s succeeded", script)
						} else if !deniedMessage(r.stderr) {
							t.Errorf("%s failed, but not for want of permission: %v", script, r)
						}
					}
					if after := gitState(t, w) + treeState(t, hooks); after != before {
						t.Errorf("hooks changed:\nbefore\n%s\nafter\n%s", before, after)
					}
					if layout == "hooksPath missing" {
						if _, err := os.Lstat(hooks); err == nil {
							t.Errorf("%s exists after the run", hooks)
						}
					}
					// The rest of the workspace is the program's.
					if r := isoRun(t, w, u, mode, runOpts{}, "/bin/sh", "-c", "echo x >> src/main.c && echo y > src/new.c && git status --short"); r.code != 0 || !strings.Contains(r.stdout, "src/") {
						t.Errorf("the workspace is not writable, or git fails: %v", r)
					}
				})
			}
		}
	}
}

// TestProtectedPathsStayPut: a protected path deeper in a writable root
// (a hooks directory such as husky's .husky/_, a missing core.hooksPath, a
// config file the repository includes from the workspace) cannot be
// replaced by moving a directory above it away and making the path anew:
// git on the host would then run the program's hook or read its config
// (core.fsmonitor runs a command). A mount follows its directory entry, so
// exact mode binds each directory between the root and a protected path
// onto itself (a mount point cannot be renamed); Landlock-only mode splits
// them. For root and an unprivileged user, in both filesystem modes (with
// -short, the users share the layouts out: shortLayouts), with the warm
// path off and then on (the last run is the warm path's where it can
// carry the run out; as nobody on a host without a delegated cgroup it
// hands the run to Go, which is not checked here).
func TestProtectedPathsStayPut(t *testing.T) {
	users := isoAnyUser(t)
	for i, u := range users {
		for _, mode := range fsModes {
			for _, layout := range shortLayouts(i, len(users), "hooksPath nested", "hooksPath missing", "included config") {
				t.Run(u.name+"/"+mode+"/"+layout, func(t *testing.T) {
					w := newWorkspace(t)
					gitRepo(t, w)
					var target string // the file git would read or run
					switch layout {
					case "hooksPath nested":
						target = filepath.Join(w.root, ".husky", "_", "pre-commit")
						mustMkdir(t, filepath.Dir(target))
						write(t, target, "#!/bin/sh\nexit 0\n")
						gitIn(t, w, w.root, "config", "core.hooksPath", ".husky/_")
					case "hooksPath missing":
						mustMkdir(t, filepath.Join(w.root, "scripts"))
						target = filepath.Join(w.root, "scripts", "git-hooks", "pre-commit")
						gitIn(t, w, w.root, "config", "core.hooksPath", "scripts/git-hooks")
					case "included config":
						target = filepath.Join(w.root, "cfg", "inc.gitconfig")
						mustMkdir(t, filepath.Dir(target))
						write(t, target, "[user]\n\tname = t\n")
						gitIn(t, w, w.root, "config", "include.path", "../cfg/inc.gitconfig")
					}
					chownTree(w, u)
					content := func() string {
						b, err := os.ReadFile(target)
						if err != nil {
							return err.Error()
						}
						return string(b)
					}
					before := gitState(t, w) + content()
					// Move the protected path's parent's parent (.husky,
					// scripts; cfg's is the root) or its parent away, then
					// make the path anew.
					script := `T=` + target + `; for P in "$(dirname "$(dirname "$T")")" "$(dirname "$T")"; do
						[ "$P" = "` + w.root + `" ] && continue
						mv "$P" "$P.old" && mkdir -p "$(dirname "$T")" && printf '[core]\n\tfsmonitor = "echo pwned"\n' > "$T" && echo replaced
					done; exit 0`
					for i, warm := range []string{"off", "debug", "debug"} {
						r := isoRun(t, w, u, mode, runOpts{env: []string{"SANDBOX_EXECUTABLE_WARM=" + warm}}, "/bin/sh", "-c", script)
						if strings.Contains(r.stdout, "replaced") {
							t.Errorf("run %d (warm path %s): %s was made anew: %v", i, warm, target, r)
						}
					}
					if after := gitState(t, w) + content(); after != before {
						t.Errorf("what git reads changed:\nbefore\n%s\nafter\n%s", before, after)
					}
					for _, glob := range []string{"*.old", "*/*.old"} {
						if matches, _ := filepath.Glob(filepath.Join(w.root, glob)); len(matches) > 0 {
							t.Errorf("moved away: %v", matches)
						}
					}
				})
			}
		}
	}
}

// shortLayouts is the layouts user i of n tries in each filesystem mode:
// all of them, but with -short (the VM guests, emulated) the users share
// them out, so that each mode still meets every layout on the guest's
// kernel and each user every mode. Which files git runs or reads is the
// same on every kernel; what keeps them put is the kernel's.
func shortLayouts(i, n int, layouts ...string) []string {
	if !testing.Short() {
		return layouts
	}
	var mine []string
	for l, layout := range layouts {
		if l%n == i {
			mine = append(mine, layout)
		}
	}
	return mine
}

// treeState lists dir's tree with sizes and modification times.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		b.WriteString(p + " " + fi.Mode().String() + " " + strconv.FormatInt(fi.Size(), 10) + " " + fi.ModTime().String() + "\n")
		return nil
	})
	return b.String()
}
