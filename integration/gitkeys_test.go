package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// gitKeyLayout is a repository whose git configuration makes git run (or
// load) a file in the workspace.
type gitKeyLayout struct {
	name string
	// setup configures w, a repository, and returns the file git would
	// run, whether it exists or not.
	setup func(t *testing.T, w *workspace) string
	// host are git's arguments, as the user would run it on the host
	// after the sandboxed program is done, so that it runs the file;
	// stdin is its input. None: git runs the file only on a terminal
	// (the pager), under script(1).
	host  []string
	stdin string
	tty   bool
}

// benign is a script that does what git expects of it and nothing else.
func benign(t *testing.T, p, body string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	write(t, p, "#!/bin/sh\n"+body+"\n")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

var gitKeyLayouts = []gitKeyLayout{
	{name: "fsmonitor", host: []string{"status"},
		setup: func(t *testing.T, w *workspace) string {
			p := filepath.Join(w.root, "tools", "fsmonitor.sh")
			benign(t, p, "exit 0")
			gitIn(t, w, w.root, "config", "core.fsmonitor", "tools/fsmonitor.sh")
			return p
		}},
	{name: "filter driver", host: []string{"add", "new.dat"},
		setup: func(t *testing.T, w *workspace) string {
			p := filepath.Join(w.root, "tools", "clean.sh")
			benign(t, p, "cat")
			gitIn(t, w, w.root, "config", "filter.cl.clean", "sh tools/clean.sh")
			write(t, filepath.Join(w.root, ".gitattributes"), "*.dat filter=cl\n")
			write(t, filepath.Join(w.root, "new.dat"), "data\n")
			return p
		}},
	{name: "diff textconv, missing", host: []string{"diff"},
		setup: func(t *testing.T, w *workspace) string {
			// (In an existing directory: Landlock-only mode stops
			// creating entries at the root's top level anyway.)
			mustMkdir(t, filepath.Join(w.root, "tools"))
			gitIn(t, w, w.root, "config", "diff.tc.textconv", "./tools/textconv")
			write(t, filepath.Join(w.root, ".gitattributes"), "*.c diff=tc\n")
			write(t, filepath.Join(w.root, "src", "main.c"), "int main(void){return 1;}\n")
			return filepath.Join(w.root, "tools", "textconv")
		}},
	{name: "alias", host: []string{"lint"},
		setup: func(t *testing.T, w *workspace) string {
			p := filepath.Join(w.root, "tools", "lint.sh")
			benign(t, p, "exit 0")
			gitIn(t, w, w.root, "config", "alias.lint", "!tools/lint.sh --fix")
			return p
		}},
	{name: "credential helper", host: []string{"credential", "fill"}, stdin: "protocol=https\nhost=example.com\n\n",
		setup: func(t *testing.T, w *workspace) string {
			p := filepath.Join(w.root, "tools", "cred.sh")
			benign(t, p, "exit 0")
			gitIn(t, w, w.root, "config", "credential.helper", "!./tools/cred.sh")
			return p
		}},
	{name: "sshCommand, missing", host: []string{"ls-remote", "ssh://example.invalid/repo"},
		setup: func(t *testing.T, w *workspace) string {
			mustMkdir(t, filepath.Join(w.root, "tools"))
			gitIn(t, w, w.root, "config", "core.sshCommand", "tools/ssh-wrapper -o BatchMode=yes")
			return filepath.Join(w.root, "tools", "ssh-wrapper")
		}},
	{name: "pager", host: []string{"log"}, tty: true,
		setup: func(t *testing.T, w *workspace) string {
			p := filepath.Join(w.root, "tools", "pager.sh")
			benign(t, p, "cat")
			gitIn(t, w, w.root, "config", "core.pager", "tools/pager.sh")
			return p
		}},
	{name: "includeIf to an editor", host: []string{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--allow-empty", "-q"},
		setup: func(t *testing.T, w *workspace) string {
			p := filepath.Join(w.root, "tools", "editor.sh")
			benign(t, p, `echo message > "$1"`)
			inc := filepath.Join(w.out, "extra.gitconfig")
			write(t, inc, "[core]\n\teditor = tools/editor.sh\n")
			gitIn(t, w, w.root, "config", "includeIf.onbranch:main.path", inc)
			return p
		}},
	{name: "home gitconfig gpg.program", host: []string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "user.signingKey=k", "commit", "--allow-empty", "-S", "-m", "x", "-q"},
		setup: func(t *testing.T, w *workspace) string {
			p := filepath.Join(w.root, "tools", "gpg.sh")
			benign(t, p, "exit 1")
			write(t, filepath.Join(w.home, ".gitconfig"), "[gpg]\n\tprogram = "+p+"\n")
			return p
		}},
}

// TestGitRunsNothingTheProgramWrote: where the repository's configuration
// (or a file it includes, or ~/.gitconfig, HOME being outside the roots)
// makes git run a file in the workspace (core.fsmonitor, a filter driver,
// a diff textconv, a shell alias, a credential helper, core.sshCommand,
// core.pager, core.editor, gpg.program), the program can neither rewrite
// that file, nor replace it (removed, renamed, its directory moved away
// and made anew), nor create it where it is missing; the host's file is
// as it was, and git on the host, run afterwards as the user would,
// runs nothing the program wrote. For root and an unprivileged user, in
// both filesystem modes, with the warm path off and then on (the last run
// is the warm path's where it can carry the run out).
func TestGitRunsNothingTheProgramWrote(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		for _, mode := range fsModes {
			for _, l := range gitKeyLayouts {
				t.Run(u.name+"/"+mode+"/"+l.name, func(t *testing.T) {
					w := newWorkspace(t)
					gitRepo(t, w)
					target := l.setup(t, w)
					chownTree(w, u)
					state := func() string {
						fi, err := os.Lstat(target)
						if err != nil {
							return err.Error()
						}
						b, _ := os.ReadFile(target)
						return fi.Mode().String() + " " + string(b)
					}
					before := state()
					marker := filepath.Join(w.out, "pwned")
					script := `T=` + target + `; M=` + marker + `
P="#!/bin/sh
echo pwned > $M
exit 0"
try() { if ( eval "$1" ) 2>/dev/null; then echo "changed: $1"; fi; }
try 'printf "%s\n" "$P" > "$T" && chmod +x "$T"'
try 'rm -f "$T" && printf "%s\n" "$P" > "$T" && chmod +x "$T"'
try 'mv -f "$T" "$T.old" && printf "%s\n" "$P" > "$T" && chmod +x "$T"'
D=$(dirname "$T")
[ "$D" = "$PWD" ] || try 'mv "$D" "$D.old" && mkdir -p "$D" && printf "%s\n" "$P" > "$T" && chmod +x "$T"'
try 'mkdir -p "$D" && printf "%s\n" "$P" > "$T" && chmod +x "$T"'
exit 0`
					for i, warm := range []string{"off", "debug", "debug"} {
						r := isoRun(t, w, u, mode, runOpts{env: []string{"SANDBOX_EXECUTABLE_WARM=" + warm}}, "/bin/sh", "-c", script)
						if r.code != 0 || strings.Contains(r.stdout, "changed") {
							t.Errorf("run %d (warm path %s): %v", i, warm, r)
						}
					}
					if after := state(); after != before {
						t.Errorf("%s changed:\nbefore %q\nafter  %q", target, before, after)
					}
					for _, glob := range []string{"*.old", "*/*.old"} {
						if matches, _ := filepath.Glob(filepath.Join(w.root, glob)); len(matches) > 0 {
							t.Errorf("moved away: %v", matches)
						}
					}
					if out, ran := hostGit(t, w, l); ran {
						if _, err := os.Stat(marker); err == nil {
							t.Errorf("git %s on the host ran what the program wrote:\n%s", strings.Join(l.host, " "), out)
						}
					}
				})
			}
		}
	}
}

// hostGit runs git in the workspace as the user would, after the runs: as
// root (safe.directory lets it use a repository nobody owns), with the
// workspace's HOME, no terminal prompts and no editor or pager of the
// environment. ran is false when it could not be run (the pager needs a
// terminal, which script(1) gives, when it is there).
func hostGit(t *testing.T, w *workspace, l gitKeyLayout) (out string, ran bool) {
	t.Helper()
	args := append([]string{"-c", "safe.directory=*"}, l.host...)
	cmd := exec.Command("git", args...)
	if l.tty {
		if _, err := exec.LookPath("script"); err != nil {
			return "", false
		}
		cmd = exec.Command("script", "-qec", "git "+strings.Join(args, " "), "/dev/null")
	}
	cmd.Dir = w.root
	cmd.Env = []string{"HOME=" + w.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", "GIT_TERMINAL_PROMPT=0", "TERM=dumb"}
	cmd.Stdin = strings.NewReader(l.stdin)
	b, _ := cmd.CombinedOutput() // git fails often here (no remote, no key): what it ran is what counts
	return string(b), true
}

// TestGitConfigEditedBetweenRuns: a decision the warm path stored read
// ~/.gitconfig; when the program (HOME being writable) adds a
// core.fsmonitor to it, the next run decides again and the script it
// names cannot be written.
func TestGitConfigEditedBetweenRuns(t *testing.T) {
	w := newWorkspace(t)
	gitRepo(t, w)
	fsm := filepath.Join(w.root, "tools", "fsm.sh")
	benign(t, fsm, "exit 0")
	// HOME in the workspace: writable, as an agent's policy may make it.
	w.home = filepath.Join(w.root, "home")
	mustMkdir(t, w.home)
	pol := wsPolicy(t, w.root)
	settle()
	if _, threads := warmRunStored(t, w, pol, "true"); threads < 3 {
		t.Fatalf("the first run was not Go's (%d threads)", threads)
	}
	if _, threads := warmRunAgain(t, w, pol, "true"); threads != 1 {
		// What else the decision read changed (a busy /tmp's listing):
		// the change below is still one a stored recipe must follow.
		t.Logf("the second run was not the warm path's (%d threads)", threads)
	}
	if r, _ := warmRun(t, w, pol, nil, `printf '[core]\n\tfsmonitor = tools/fsm.sh\n' >> "$HOME/.gitconfig"`); r.code != 0 {
		t.Fatalf("the program could not write ~/.gitconfig: %v", r)
	}
	settle()
	r, _ := warmRun(t, w, pol, nil, "echo 'echo pwned' > tools/fsm.sh")
	if r.code == 0 {
		t.Errorf("the script the new core.fsmonitor names was written: %v", r)
	}
	if got := readFile(t, fsm); got != "#!/bin/sh\nexit 0\n" {
		t.Errorf("%s: %q", fsm, got)
	}
}

// TestGitIncludesAreLookedAtNotOpened: the helper reads the git
// configuration a program can write (.git/config) to find what git runs,
// includes too; a FIFO an include names is looked at, never opened (nor
// a device: opening one has effects of its own, and a writer waiting on a
// FIFO goes on when a reader comes). Both where Go decides and where the
// warm path checks what a stored decision read (C): an include missing at
// the decision, a FIFO at the next run.
func TestGitIncludesAreLookedAtNotOpened(t *testing.T) {
	w := newWorkspace(t)
	gitRepo(t, w)
	dir := t.TempDir()
	now, later := filepath.Join(dir, "now"), filepath.Join(dir, "later")
	if err := syscall.Mkfifo(now, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(w.root, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "[include]\n\tpath = %s\n\tpath = %s\n", now, later)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	in, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(in)
	names := map[int32]string{}
	watch := func(p string) {
		// A close is an open's trace on every kernel (an O_PATH
		// descriptor's open made an event before 6.5, its close never).
		wd, err := syscall.InotifyAddWatch(in, p, syscall.IN_CLOSE_WRITE|syscall.IN_CLOSE_NOWRITE)
		if err != nil {
			t.Fatal(err)
		}
		names[int32(wd)] = p
	}
	opened := func(when string) {
		var buf [4096]byte
		n, err := syscall.Read(in, buf[:])
		if err == syscall.EAGAIN {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			e := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			t.Errorf("%s: %s was opened", when, names[e.Wd])
			off += syscall.SizeofInotifyEvent + int(e.Len)
		}
	}
	watch(now)
	pol := wsPolicy(t, w.root)
	settle()
	if r, _ := warmRunStored(t, w, pol, "true"); r.code != 0 {
		t.Fatalf("first run: %v", r)
	}
	opened("the first run")
	if err := syscall.Mkfifo(later, 0o600); err != nil {
		t.Fatal(err)
	}
	watch(later)
	settle()
	if r, _ := warmRun(t, w, pol, nil, "true"); r.code != 0 {
		t.Fatalf("second run: %v", r)
	}
	opened("the second run")
}
