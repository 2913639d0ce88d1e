package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gitCommitRun runs script under the built-in default with
// --allow-git-commit in mode as u, the warm path as warm says. An
// unprivileged user's run lifts the limits that need a cgroup (none can be
// delegated here), which changes nothing of the filesystem.
func gitCommitRun(t *testing.T, w *workspace, u isoUser, mode, warm string, flags []string, script string) result {
	t.Helper()
	args := append(append(slices.Clip(flags), fsOpts(t, mode)...), "--no-project-files")
	if u.cred != nil {
		args = append(args, "--memory", "unlimited", "--pids", "unlimited", "--cpu", "unlimited")
	}
	args = append(args, "--", "/bin/sh", "-c", script)
	env := isoEnv(w, "SANDBOX_EXECUTABLE_WARM="+warm, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	return run(t, runOpts{env: env, dir: w.root, cred: u.cred}, args...)
}

// hostGitOut runs git in w.root on the host, as root, and returns its
// output.
func hostGitOut(t *testing.T, w *workspace, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = w.root
	cmd.Env = []string{"HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v on the host: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestGitCommitInTheSandbox: with --allow-git-commit, git add, commit,
// stash, checkout -b and rebase work in the sandbox, and what they made is
// the host's repository's: for root and an unprivileged user, in both
// filesystem modes, with the warm path off and then on.
func TestGitCommitInTheSandbox(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := newWorkspace(t)
				gitRepo(t, w)
				chownTree(w, u)
				script := `set -e
n=$(git rev-list --count HEAD)
echo "$n" >> src/main.c
git add src/main.c
git commit -q -m "c$n"
git checkout -q -b "b$n"
echo "s$n" >> src/main.c
git stash -q
git stash pop -q
git commit -q -a -m "s$n"
git checkout -q main
git rebase -q "b$n"
echo done`
				for i, warm := range []string{"off", "debug", "debug"} {
					r := gitCommitRun(t, w, u, mode, warm, []string{"--allow-git-commit"}, script)
					if r.code != 0 || !strings.Contains(r.stdout, "done") {
						t.Fatalf("run %d (warm path %s): %v", i, warm, r)
					}
				}
				if got := hostGitOut(t, w, "log", "--format=%s", "main"); got != "s5\nc5\ns3\nc3\ns1\nc1\ninit" {
					t.Errorf("the host's log of main:\n%s", got)
				}
				if got := hostGitOut(t, w, "branch", "--format=%(refname:short)"); got != "b1\nb3\nb5\nmain" {
					t.Errorf("the host's branches:\n%s", got)
				}
				if got := hostGitOut(t, w, "status", "--porcelain"); got != "" {
					t.Errorf("the host's status:\n%s", got)
				}
			})
		}
	}
}

// gitAttacks is a script that tries, each in its own way, to have git on
// the host run a file that writes marker or write victim through a link
// (packed, a file git reads as packed-refs, for the link of that name);
// it prints "changed: ..." for each attempt that succeeded.
func gitAttacks(marker, victim, packed string) string {
	return `M=` + marker + `; V=` + victim + `; P=` + packed + `
H="#!/bin/sh
echo pwned > $M"
C="[core]
	fsmonitor = \"echo pwned > $M; false\"
	pager = \"echo pwned > $M; cat\"
[alias]
	st = !echo pwned > $M"
try() { if ( eval "$1" ) 2>/dev/null; then echo "changed: $1"; fi; }
try 'printf "%s\n" "$C" >> .git/config'
try 'mv .git/config .git/config.old && printf "%s\n" "$C" > .git/config'
try 'rm -f .git/config && printf "%s\n" "$C" > .git/config'
try 'printf "%s\n" "$C" > .git/config.worktree'
try 'mkdir -p common && printf "%s\n" "$C" > common/config && echo ../common > .git/commondir'
try 'printf "%s\n" "$H" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit'
try 'mv .git/hooks .git/hooks.old && mkdir .git/hooks && printf "%s\n" "$H" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit'
try 'mkdir -p hooks2 && printf "%s\n" "$H" > hooks2/pre-commit && chmod +x hooks2/pre-commit && rm -rf .git/hooks && ln -s ../hooks2 .git/hooks'
try 'echo "* diff=x" > .git/info/attributes'
try 'echo "src" >> .git/info/exclude'
try 'mkdir -p .git/modules/sub && printf "%s\n" "$C" > .git/modules/sub/config'
try 'mkdir -p .git/worktrees/wt && printf "%s\n" "$C" > .git/worktrees/wt/config.worktree'
try 'mkdir -p .git/remotes && echo "URL: ext::sh -c touch% $M" > .git/remotes/origin'
try 'rm -f .git/logs/HEAD && ln -s "$V" .git/logs/HEAD'
try 'ln -sf "$V" .git/COMMIT_EDITMSG'
try 'ln -s "$P" .git/packed-refs'
try 'ln -s "$V" link && mv link .git/logs/HEAD && [ -L .git/logs/HEAD ]'
try 'mkdir -p d && ln -s "$V" d/main && mv d .git/logs/refs/heads2 && [ -L .git/logs/refs/heads2/main ]'
try 'mkdir .git/new && ln -s "$V" .git/new/x'
try 'ln "$V" .git/ORIG_HEAD'
try 'mkfifo .git/index.fifo'
try 'mkfifo .git/logs/fifo'
try 'mv .git .git.old && mkdir .git'
exit 0`
}

// packedRefs is what git reads as an empty packed-refs file.
const packedRefs = "# pack-refs with: peeled fully-peeled sorted \n"

// TestGitCommitKeepsWhatGitRuns: with --allow-git-commit the program can
// neither change what git runs or loads in .git (config, a config of the
// worktree's, commondir, hooks, info, the submodules' and worktrees' git
// directories), nor replace it (renamed away and made anew, a link in its
// place, .git itself moved away), nor make a symbolic link, FIFO or hard
// link in .git through which git on the host would write elsewhere (a
// reflog, COMMIT_EDITMSG, packed-refs): each attempt fails, no link or
// FIFO is left in .git, and git on the host, committing and switching
// branches afterwards, runs nothing the program wrote and writes nothing
// outside. For root and an unprivileged user, in both filesystem modes,
// cold and warm.
func TestGitCommitKeepsWhatGitRuns(t *testing.T) {
	users := isoAnyUser(t)
	// The attempts, bare on the host: each one succeeds there, so a
	// sandbox that let one through would be seen.
	bare := newWorkspace(t)
	gitRepo(t, bare)
	script := gitAttacks(filepath.Join(bare.out, "pwned"), filepath.Join(bare.out, "victim"), filepath.Join(bare.out, "packed"))
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = bare.root
	out, err := cmd.Output()
	if tries, changed := strings.Count(script, "\ntry '"), strings.Count(string(out), "changed: "); err != nil || changed != tries {
		t.Fatalf("bare, %d of %d attempts succeeded (%v):\n%s", changed, tries, err, out)
	}
	for _, u := range users {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := newWorkspace(t)
				gitRepo(t, w)
				chownTree(w, u)
				marker, victim, packed := filepath.Join(w.out, "pwned"), filepath.Join(w.out, "victim"), filepath.Join(w.out, "packed")
				write(t, packed, packedRefs)
				before := readFile(t, victim)
				script := gitAttacks(marker, victim, packed)
				for i, warm := range []string{"off", "debug"} {
					r := gitCommitRun(t, w, u, mode, warm, []string{"--allow-git-commit"}, script)
					if r.code != 0 || strings.Contains(r.stdout, "changed") {
						t.Errorf("run %d (warm path %s): %v", i, warm, r)
					}
				}
				if out, err := exec.Command("find", filepath.Join(w.root, ".git"), "(", "-type", "l", "-o", "-type", "p", "-o", "-type", "s", ")").CombinedOutput(); err != nil || len(out) > 0 {
					t.Errorf("links, FIFOs or sockets in .git: %v\n%s", err, out)
				}
				for _, p := range []string{".git.old", ".git/config.old", ".git/hooks.old"} {
					if _, err := os.Lstat(filepath.Join(w.root, p)); err == nil {
						t.Errorf("%s exists", p)
					}
				}
				// Git on the host, as the user would run it next.
				for _, args := range [][]string{
					{"status"},
					{"st"},
					{"-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "--allow-empty", "-m", "from the host"},
					{"checkout", "-q", "-b", "from-host"},
					{"log", "--oneline"},
					{"fetch", "origin"},
					{"pack-refs", "--all"},
				} {
					out, _ := hostGit(t, w, gitKeyLayout{host: args})
					if _, err := os.Stat(marker); err == nil {
						t.Fatalf("git %s on the host ran what the program wrote:\n%s", strings.Join(args, " "), out)
					}
				}
				if after := readFile(t, victim); after != before {
					t.Errorf("git on the host wrote %s through a link: %q", victim, after)
				}
				if after := readFile(t, packed); after != packedRefs {
					t.Errorf("git on the host wrote %s through a link: %q", packed, after)
				}
			})
		}
	}
}

// TestGitCommitOnlyWithTheFlag: without --allow-git-commit .git stays as
// it is (a commit fails, nothing in .git changes); with a policy given on
// the command line the flag is refused in one line (VT Code's calls stay
// exact); a settings file in the parent directory asks for it as the flag
// does, and one in the workspace is ignored.
func TestGitCommitOnlyWithTheFlag(t *testing.T) {
	w := newWorkspace(t)
	gitRepo(t, w)
	const commit = `echo x >> src/main.c && git commit -q -a -m again && echo committed`
	before := gitState(t, w)
	for _, mode := range fsModes {
		if r := gitCommitRun(t, w, isoRoot, mode, "off", nil, commit); r.code == 0 || strings.Contains(r.stdout, "committed") {
			t.Errorf("%s: a commit without --allow-git-commit: %v", mode, r)
		}
	}
	if after := gitState(t, w); after != before {
		t.Errorf(".git changed without --allow-git-commit:\nbefore %s\nafter  %s", before, after)
	}
	r := run(t, runOpts{env: w.env(), dir: w.root}, "--allow-git-commit", "--sandbox-policy", wsPolicy(t, w.root), "--", "/bin/true")
	if r.code != 125 || !strings.HasPrefix(r.stderr, "sandbox-executable: --allow-git-commit: would make the repository's .git writable;") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("--allow-git-commit with a policy: %v", r)
	}
	// From a settings file: the parent's counts; the workspace's own is
	// ignored (the nearest one is read, and a program could write it).
	env := append(w.env(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	parent := filepath.Join(filepath.Dir(w.root), ".sandbox.json")
	write(t, parent, `{"allow_git_commit":true}`)
	n := hostGitOut(t, w, "rev-list", "--count", "HEAD")
	r = run(t, runOpts{env: env, dir: w.root}, "--", "/bin/sh", "-c", commit)
	if r.code != 0 || !strings.Contains(r.stdout, "committed") {
		t.Errorf("allow_git_commit in the parent's .sandbox.json: %v", r)
	}
	if got := hostGitOut(t, w, "rev-list", "--count", "HEAD"); got != strconv.Itoa(atoi(t, n)+1) {
		t.Errorf("commits on the host: %s, then %s", n, got)
	}
	if err := os.Remove(parent); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.root, ".sandbox.json"), `{"allow_git_commit":true}`)
	if r := run(t, runOpts{env: env, dir: w.root}, "--", "/bin/sh", "-c", commit); r.code == 0 || !strings.Contains(r.stderr, ".sandbox.json ignored") {
		t.Errorf("allow_git_commit in the workspace's own .sandbox.json: %v", r)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
