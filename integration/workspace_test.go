package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sandbox-executable/internal/testcap"
)

// gitRepo makes w.root a git repository with one commit.
func gitRepo(t *testing.T, w *workspace) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "."},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.root
		cmd.Env = append(os.Environ(), "HOME="+w.home)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// gitState is what must not change when the sandbox tries to write .git.
func gitState(t *testing.T, w *workspace) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(filepath.Join(w.root, ".git"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, _ := d.Info()
		b.WriteString(p)
		if info != nil && !d.IsDir() {
			b.WriteString(" " + info.ModTime().String())
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// shIn runs a shell script under the workspace policy in mode; the script
// gets a writable GOCACHE/npm cache in its TMPDIR, as a user would set up.
func shIn(t *testing.T, w *workspace, mode, dir, script string) result {
	t.Helper()
	env := "export GOCACHE=$TMPDIR/gocache GOPATH=$TMPDIR/gopath npm_config_cache=$TMPDIR/npm GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com; "
	args := []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root)}
	args = append(append(args, fsOpts(t, mode)...), "--", "/bin/sh", "-c", env+script)
	return run(t, runOpts{env: append(w.env(), "PATH=/usr/local/go/bin:/usr/bin:/bin"), dir: dir}, args...)
}

// TestGitMetadataStaysUnwritable: in a repository, git status and diff work
// and sources can be edited, but .git, .vtcode and friends cannot be
// written, removed, moved or created, in both modes.
func TestGitMetadataStaysUnwritable(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			w := newWorkspace(t)
			gitRepo(t, w)
			before := gitState(t, w)
			src := filepath.Join(w.root, "src")
			r := shIn(t, w, mode, src, `echo 'int x;' >> main.c && echo new > new.c && git status --short && git diff --stat`)
			if r.code != 0 || !strings.Contains(r.stdout, "main.c") || !strings.Contains(r.stdout, "?? new.c") {
				t.Fatalf("editing and git status: %v", r)
			}
			for _, script := range []string{
				`echo x >> "$R/.git/config"`,
				`mkdir -p "$R/.git/hooks" && printf '#!/bin/sh\necho pwned\n' > "$R/.git/hooks/post-commit"`,
				`rm -rf "$R/.git"; test ! -e "$R/.git/HEAD"`,
				`mv "$R/.git" "$R/x"`,
				`mkdir -p "$R/.vtcode" && echo x > "$R/.vtcode/x"`,
				`mkdir -p "$R/.codex/y"`,
				`echo x > "$R/.agents"`,
			} {
				r := shIn(t, w, mode, src, "R="+w.root+"; "+script)
				if r.code == 0 {
					t.Errorf("%s succeeded", script)
				} else if !deniedMessage(r.stderr) {
					t.Errorf("%s failed, but not for want of permission: %v", script, r)
				}
			}
			if after := gitState(t, w); after != before {
				t.Errorf(".git changed:\nbefore\n%s\nafter\n%s", before, after)
			}
			for _, n := range []string{".vtcode", ".codex", ".agents", "x"} {
				if _, err := os.Lstat(filepath.Join(w.root, n)); err == nil {
					t.Errorf("%s exists after the run", n)
				}
			}
		})
	}
}

// TestNoNewGitWhereNoneExists: a workspace that is not a repository cannot
// be given one (a .git with hooks would run outside the sandbox later).
func TestNoNewGitWhereNoneExists(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			w := newWorkspace(t)
			r := shIn(t, w, mode, w.root, `git init -q '`+w.root+`'`)
			if r.code == 0 {
				t.Errorf("git init in the root succeeded: %v", r)
			} else if !deniedMessage(r.stderr) {
				t.Errorf("git init failed, but not for want of permission: %v", r)
			}
			if r := shIn(t, w, mode, w.root, `mkdir -p '`+w.root+`/.git/hooks'`); r.code == 0 || !deniedMessage(r.stderr) {
				t.Errorf("mkdir -p .git/hooks: %v", r)
			}
			if _, err := os.Lstat(filepath.Join(w.root, ".git", "HEAD")); err == nil {
				t.Errorf("a repository was created")
			}
			if _, err := os.Lstat(filepath.Join(w.root, ".git")); err == nil {
				t.Errorf("the placeholder for .git was left behind")
			}
		})
	}
}

// TestGitCommitFailsCleanly: the contract protects .git, so git commit must
// fail with a plain error, quickly, leaving the repository as it was.
func TestGitCommitFailsCleanly(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			w := newWorkspace(t)
			gitRepo(t, w)
			before := gitState(t, w)
			r := shIn(t, w, mode, w.root, `echo change >> src/main.c; git commit -qam change`)
			if r.code == 0 {
				t.Fatalf("git commit succeeded")
			}
			if !strings.Contains(r.stderr, "Read-only file system") && !strings.Contains(r.stderr, "Permission denied") {
				t.Errorf("git's error is not a plain permission error: %q", r.stderr)
			}
			if after := gitState(t, w); after != before {
				t.Errorf("a half-written commit:\n%s", after)
			}
		})
	}
}

// TestGitWorktreeGitdirProtected: where .git is a file pointing at a git
// directory elsewhere inside a writable root (git init --separate-git-dir,
// worktrees), that directory is protected too.
func TestGitWorktreeGitdirProtected(t *testing.T) {
	w := newWorkspace(t)
	proj, meta := filepath.Join(w.root, "proj"), filepath.Join(w.root, "meta")
	cmd := exec.Command("git", "init", "-q", "--separate-git-dir="+meta, proj)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	head := filepath.Join(meta, "HEAD")
	before := readFile(t, head)
	// The whole workspace is writable, and the program runs in proj (a
	// writable root of its own, as VT Code's cwd is): only the protection
	// of proj/.git's git dir stands between the program and meta/.
	pol := wsPolicy(t, w.root)
	for _, mode := range fsModes {
		args := append([]string{"--sandbox-policy-cwd", proj, "--sandbox-policy", pol}, fsOpts(t, mode)...)
		r := run(t, runOpts{env: w.env(), dir: proj}, append(args, "--", "/bin/sh", "-c",
			"echo x > "+head+"; mkdir -p "+filepath.Join(meta, "hooks")+" && echo pwned > "+filepath.Join(meta, "hooks", "post-checkout"))...)
		if r.code == 0 || !deniedMessage(r.stderr) {
			t.Errorf("%s: the separate git dir was writable: %v", mode, r)
		}
		if _, err := os.Lstat(filepath.Join(meta, "hooks", "post-checkout")); err == nil {
			t.Errorf("%s: a hook was planted", mode)
		}
	}
	if after := readFile(t, head); after != before {
		t.Errorf("HEAD changed: %q -> %q", before, after)
	}
}

// deniedMessage reports whether a tool's stderr says it was refused for
// want of permission (and not, say, because a path did not exist).
func deniedMessage(stderr string) bool {
	// "Is a directory": a placeholder stands where a protected name was
	// missing.
	for _, m := range []string{"Read-only file system", "Permission denied", "Operation not permitted", "Device or resource busy", "Invalid cross-device link", "Is a directory"} {
		if strings.Contains(stderr, m) {
			return true
		}
	}
	return false
}

// TestSymlinkOutOfTheRootGivesNothing: ws/out -> /etc gives no write to
// /etc.
func TestSymlinkOutOfTheRootGivesNothing(t *testing.T) {
	for _, mode := range fsModes {
		w := newWorkspace(t)
		if err := os.Symlink(w.out, filepath.Join(w.root, "src", "out")); err != nil {
			t.Fatal(err)
		}
		r := shIn(t, w, mode, w.root, `echo pwned > src/out/victim; echo x > src/out/new`)
		if r.code == 0 {
			t.Errorf("%s: writes through the link succeeded", mode)
		}
		if got := readFile(t, filepath.Join(w.out, "victim")); got != "original\n" {
			t.Errorf("%s: outside file changed through a symlink: %q", mode, got)
		}
		if _, err := os.Lstat(filepath.Join(w.out, "new")); err == nil || !deniedMessage(r.stderr) {
			t.Errorf("%s: a file created through the link, or no permission error: %v", mode, r)
		}
	}
}

// TestRealWorkStillWorks: what a coding agent runs in a workspace works: a
// Go build, a Python venv, npm init, make, sed -i and an editor's
// write-then-rename save. Exact mode at the root's top level; Landlock-only
// mode in a subdirectory (its top level is narrowed, as --explain says).
func TestRealWorkStillWorks(t *testing.T) {
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		testcap.Skipf(t, testcap.Installed, "no Go toolchain at /usr/local/go")
	}
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			// A workspace with .git, as agents work in (in one without,
			// exact mode's placeholder .git makes go build's VCS stamping
			// fail: README, "Known limits").
			w := newWorkspace(t)
			gitRepo(t, w)
			dir := w.root
			if mode == "landlock" {
				dir = filepath.Join(w.root, "src")
			}
			steps := []struct{ name, script string }{
				{"go build", `mkdir hello && cd hello && printf 'module hello\n\ngo 1.21\n' > go.mod && printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("built") }\n' > main.go && go build -o hello . && ./hello`},
				{"python venv", `/usr/bin/python3 -m venv --without-pip venv && ./venv/bin/python -c 'print("venv")'`},
				{"npm init", `mkdir pkg && cd pkg && npm init -y >/dev/null && grep -q '"name": "pkg"' package.json && echo npm`},
				{"make", `printf 'all:\n\techo made > made.txt\n' > Makefile && make -s && cat made.txt`},
				{"sed -i", `printf 'a\nb\n' > f.txt && sed -i 's/a/c/' f.txt && head -1 f.txt`},
				{"editor save", `echo v1 > doc.txt && echo v2 > .doc.txt.swp && mv .doc.txt.swp doc.txt && cat doc.txt`},
				{"temp dir", `t=$(mktemp) && echo tmp > "$t" && cat "$t"`},
			}
			want := []string{"built", "venv", "npm", "made", "c", "v2", "tmp"}
			if os.Getenv("SE_VM_GUEST") == "1" {
				// Compiling the standard library with a cold cache under
				// QEMU's emulation takes minutes; the host run covers it.
				steps, want = steps[1:], want[1:]
			}
			for i, s := range steps {
				r := shIn(t, w, mode, dir, s.script)
				if r.code != 0 || !strings.Contains(r.stdout, want[i]) {
					t.Errorf("%s: %v", s.name, r)
				}
			}
		})
	}
}

// TestLandlockOnlyAsUnprivilegedUser: an unprivileged user, Landlock-only
// mode forced: secrets unreadable, writes confined, and the mode and its
// narrowing shown by --explain.
func TestLandlockOnlyAsUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root to switch to nobody")
	}
	w := newWorkspace(t)
	for _, p := range []string{w.root, w.home, w.out, filepath.Join(w.root, "src")} {
		_ = filepath.Walk(p, func(q string, _ os.FileInfo, _ error) error { return os.Lchown(q, 65534, 65534) })
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	noTreeLimits := `{"max_memory_mb":0,"max_pids":0,"max_disk_mb":0,"cpu_time_secs":0,"timeout_secs":60}`
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root), "--resource-limits", noTreeLimits}, fsOpts(t, mode)...)
			args = append(args, "--")
			sb := func(argv ...string) result {
				return run(t, runOpts{env: w.env(), dir: w.root, cred: nobody}, append(args, argv...)...)
			}
			if r := sb(probe, "read", filepath.Join(w.home, ".ssh", "id_rsa")); probeResult(r) == "ok" {
				t.Errorf("secret readable as nobody: %v", r)
			}
			if r := sb(probe, "read", filepath.Join(w.home, "docs", "notes.txt")); probeResult(r) != "ok" {
				t.Errorf("notes unreadable as nobody: %v", r)
			}
			if r := sb(probe, "create", filepath.Join(w.root, "src", "made-by-nobody-"+mode)); probeResult(r) != "ok" {
				t.Errorf("write inside as nobody: %v", r)
			}
			if r := sb(probe, "create", filepath.Join(w.out, "made-by-nobody-"+mode)); !denied(probeResult(r)) {
				t.Errorf("write outside as nobody: %v", r)
			}
			r := run(t, runOpts{env: w.env(), dir: w.root, cred: nobody}, append([]string{"--explain"}, args[:len(args)-1]...)...)
			if !strings.Contains(r.stdout, `"mode": "`+mode+`"`) {
				t.Errorf("explain does not say mode %s: %s", mode, r.stdout)
			}
			if mode == "landlock" && !strings.Contains(r.stdout, `"narrowed"`) {
				t.Errorf("explain does not show the narrowing")
			}
		})
	}
}

// TestCallerConfigUnreadable: VT Code's own directories are in the default
// sensitive list.
func TestCallerConfigUnreadable(t *testing.T) {
	w := newWorkspace(t)
	cfg := filepath.Join(w.home, ".config", "vtcode")
	mustMkdir(t, cfg)
	write(t, filepath.Join(cfg, "auth.json"), "token\n")
	other := filepath.Join(w.home, ".config", "other-tool")
	mustMkdir(t, other)
	write(t, filepath.Join(other, "settings"), "plain\n")
	for _, mode := range fsModes {
		if r := w.sandbox(t, roPolicy, fsOpts(t, mode), probe, "read", filepath.Join(cfg, "auth.json")); r.code != 1 || !secretDenied(probeResult(r)) {
			t.Errorf("%s: VT Code's config: %v", mode, r)
		}
		if v := probeResult(w.sandbox(t, roPolicy, fsOpts(t, mode), probe, "read", filepath.Join(other, "settings"))); v != "ok" {
			t.Errorf("%s: another tool's config beside it: %s", mode, v)
		}
	}
}

// TestStateDirectoryUnwritable: the helper's state directory (its filter
// cache is trusted by every later run) cannot be written by a sandboxed
// program even when the policy makes the directory around it writable, and
// XDG_RUNTIME_DIR does not move it (it once did: a run with it protected
// one place, and a run without it trusted another).
func TestStateDirectoryUnwritable(t *testing.T) {
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root to switch to nobody")
	}
	w := newWorkspace(t)
	runtimeDir := filepath.Join(w.root, "xdg-runtime")
	mustMkdir(t, filepath.Join(runtimeDir, "other"))
	if err := os.Chmod(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{w.root, w.home, w.out} {
		_ = filepath.Walk(p, func(q string, _ os.FileInfo, _ error) error { return os.Lchown(q, 65534, 65534) })
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	noTreeLimits := `{"max_memory_mb":0,"max_pids":0,"max_disk_mb":0,"cpu_time_secs":0,"timeout_secs":60}`
	env := append(w.env(), "XDG_RUNTIME_DIR="+runtimeDir)
	// Where the helper keeps nobody's state (runstate): never in
	// XDG_RUNTIME_DIR.
	state := "/tmp/sandbox-executable-65534"
	if st, err := os.Lstat("/run/user/65534"); err == nil && st.IsDir() && st.Mode().Perm() == 0o700 && st.Sys().(*syscall.Stat_t).Uid == 65534 {
		state = "/run/user/65534/sandbox-executable"
	}
	// A directory of nobody's beside the state directory, in its parent.
	beside, err := os.MkdirTemp(filepath.Dir(state), "se-beside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(beside) })
	if err := os.Lchown(beside, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root, filepath.Dir(state)), "--resource-limits", noTreeLimits}, fsOpts(t, mode)...)
			sb := func(argv ...string) result {
				return run(t, runOpts{env: env, dir: w.root, cred: nobody}, append(append(args, "--"), argv...)...)
			}
			// Below the state directory's writable parent the policy's
			// write access holds (Landlock-only mode narrows the parent's
			// own entries, as --explain says).
			if r := sb(probe, "create", filepath.Join(beside, mode)); probeResult(r) != "ok" {
				t.Fatalf("write beside the state directory: %v", r)
			}
			if _, err := os.Stat(filepath.Join(state, "bpf")); err != nil {
				t.Fatalf("the run made no state directory where this test looks: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(runtimeDir, "sandbox-executable")); err == nil {
				t.Errorf("XDG_RUNTIME_DIR chose a state directory")
			}
			for _, target := range []string{filepath.Join(state, "bpf", "planted-"+mode), filepath.Join(state, "planted-"+mode)} {
				if r := sb(probe, "create", target); !denied(probeResult(r)) {
					t.Errorf("the program wrote %s: %v", target, r)
				}
				if _, err := os.Lstat(target); err == nil {
					t.Errorf("%s exists", target)
					os.Remove(target)
				}
			}
		})
	}
}
