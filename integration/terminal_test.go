package integration

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// The terminal stays the user's (issue 27). Each test drives a real pty the
// way VT Code's portable-pty does (the helper a session leader whose
// controlling terminal is the pty), or an interactive bash on one, and
// checks what a plain exec gives: job control, signals and exit codes, a
// terminal the program cannot take when its stdio is not the terminal, and
// a terminal left as it was.

// termMode is one way a run reaches the runner, which carries out every
// run: a recipe just decided, a stored one on the warm path (primed by a
// first run of the same invocation, on the same terminal), the built-in
// default policy (a private temp dir, Go serving from the start), or a run
// whose end Go reports (a report is written).
type termMode struct {
	name   string
	env    []string
	policy bool     // a workspace policy (else the built-in default)
	opts   []string // helper options before "--"
	prime  bool
}

var termModes = []termMode{
	{name: "decided", env: []string{"SANDBOX_EXECUTABLE_WARM=off"}, policy: true},
	{name: "warm", env: []string{"SANDBOX_EXECUTABLE_WARM=debug"}, policy: true, prime: true},
	{name: "default-policy", env: []string{"SANDBOX_EXECUTABLE_WARM=off"}},
	{name: "reported", env: []string{"SANDBOX_EXECUTABLE_WARM=off"}, policy: true, opts: []string{"--report-file", "/dev/null"}},
}

// args are the helper's arguments for argv in mode m over w.
func (m termMode) args(t *testing.T, w *workspace, argv ...string) []string {
	t.Helper()
	var args []string
	if m.policy {
		args = append(args, "--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root))
	}
	args = append(append(args, m.opts...), "--")
	return append(args, argv...)
}

// termEnv is a run's environment on a terminal.
func termEnv(w *workspace, extra ...string) []string {
	return append([]string{"PATH=/usr/bin:/bin", "HOME=" + w.home, "LANG=C", "TERM=dumb", "PS1=$ "}, extra...)
}

// terminal is a pty whose master the test holds, and what it has shown.
type terminal struct {
	master, slave *os.File
	out           *syncBuffer
}

func openTerminal(t *testing.T) *terminal {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { master.Close(); slave.Close() })
	if err := pty.Setsize(master, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	term := &terminal{master: master, slave: slave, out: &syncBuffer{}}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			term.out.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	return term
}

// lead starts argv as a session leader whose controlling terminal is the
// pty, with the pty as stdin, stdout and stderr: portable-pty's spawn.
func (term *terminal) lead(t *testing.T, env []string, dir string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term.slave, term.slave, term.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started.Store(cmd.Process.Pid, true)
	return cmd
}

// waitFor waits until the terminal has shown s (count times), and says
// whether it did within d.
func (term *terminal) waitFor(s string, count int, d time.Duration) bool {
	return isoPoll(d, func() bool { return strings.Count(term.out.String(), s) >= count })
}

func (term *terminal) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(term.master, s); err != nil {
		t.Fatal(err)
	}
}

// exitOf waits up to d for cmd and returns its exit code (128+N for a
// signal); false when it did not end, and then it and its session are
// killed.
func exitOf(cmd *exec.Cmd, d time.Duration) (int, bool) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(d):
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		_ = cmd.Process.Kill()
		<-done
		return 0, false
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return ws.ExitStatus(), true
}

// killTagged SIGKILLs every process whose command line holds tag, helpers
// included: what a failed run left.
func killTagged(tag string) {
	for _, p := range taggedPIDs(tag) {
		if pid, err := strconv.Atoi(p); err == nil && pid != os.Getpid() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// stat is a process's name and its /proc stat fields after the name
// (state, ppid, pgrp, session, ...), or ok false.
func stat(pid string) (name string, fields []string, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if err != nil || open < 0 || end < open {
		return "", nil, false
	}
	return s[open+1 : end], strings.Fields(s[end+1:]), true
}

// tagged describes every process whose command line holds tag (the
// helper, its init and guardian share its command line): pid, name,
// state, parent, group, session; for a failure's message.
func tagged(tag string) string {
	var out []string
	for _, pid := range taggedPIDs(tag) {
		if name, f, ok := stat(pid); ok && len(f) > 3 {
			out = append(out, fmt.Sprintf("%s (%s) state %s ppid %s pgrp %s sid %s", pid, name, f[0], f[1], f[2], f[3]))
		}
	}
	return strings.Join(out, "; ")
}

// processState is the state letter of the first process whose command line
// holds tag and whose program is name ("" when there is none).
func processState(tag, name string) string {
	for _, pid := range taggedPIDs(tag) {
		if n, f, ok := stat(pid); ok && n == name && len(f) > 0 {
			return f[0]
		}
	}
	return ""
}

// primeOn runs args once with /bin/true as the program, on term, so that
// the next run of the same invocation there finds the recipe it stored.
func primeOn(t *testing.T, term *terminal, w *workspace, env []string, args []string) {
	t.Helper()
	i := len(args) - 1
	for args[i] != "--" {
		i--
	}
	// A decision that read what was changing (another run's temp dir
	// made in /tmp meanwhile) is not stored: a few tries.
	for try := 0; try < 3; try++ {
		before := strings.Count(term.out.String(), warmStored)
		cmd := term.lead(t, env, w.root, append(append([]string{binary}, args[:i+1]...), "/bin/true")...)
		if code, ok := exitOf(cmd, 60*time.Second); !ok || code != 0 {
			t.Fatalf("priming run: exit %d (ended %v); terminal shows %q", code, ok, term.out.String())
		}
		if strings.Count(term.out.String(), warmStored) > before {
			return
		}
	}
}

// warmStored is what SANDBOX_EXECUTABLE_WARM=debug says of a stored recipe.
const warmStored = "warm path: stored:"

// runOnTerminal starts the helper with args on a new terminal as its
// session leader (primed first in the warm mode) and returns the terminal
// and the helper.
func runOnTerminal(t *testing.T, w *workspace, m termMode, argv ...string) (*terminal, *exec.Cmd) {
	t.Helper()
	term := openTerminal(t)
	env := termEnv(w, m.env...)
	args := m.args(t, w, argv...)
	if m.prime {
		primeOn(t, term, w, env, args)
	}
	return term, term.lead(t, env, w.root, append([]string{binary}, args...)...)
}

// logWarm logs a warm-mode run that was not the warm path's: its decision
// read what it cannot store, or what it read changed (logged, not failed).
func logWarm(t *testing.T, m termMode, shown string) {
	if m.prime && !strings.Contains(shown, "carrying out the stored recipe") {
		t.Logf("%s: the run was not the warm path's: %q", m.name, shown)
	}
}

// TestTerminalStopInPTYSession: in VT Code's PTY shape, Ctrl-Z typed while
// the program runs does what it does without the helper: the helper leads
// an orphaned process group, the kernel discards the stop, and the program
// goes on to print "slept-ok" and exit 0. (The program used to lead a group
// of its own whose parent, the init, kept it from being orphaned: the stop
// was delivered and nothing ever continued it.) Ctrl-C then still ends a
// second program, and SIGWINCH reaches it exactly once, with 130 as its
// exit, after a Ctrl-Z typed at it as well.
func TestTerminalStopInPTYSession(t *testing.T) {
	w := newWorkspace(t)
	const script = `echo ready; sleep 1; echo slept-ok`
	// Without the helper, as a baseline the test can see.
	bare := openTerminal(t)
	cmd := bare.lead(t, termEnv(w), w.root, "/bin/bash", "-c", script)
	if !bare.waitFor("ready", 1, 20*time.Second) {
		t.Fatalf("bare: never ready; terminal shows %q", bare.out.String())
	}
	bare.write(t, "\x1a")
	if code, ok := exitOf(cmd, 20*time.Second); !ok || code != 0 || !bare.waitFor("slept-ok", 1, 5*time.Second) {
		t.Fatalf("bare: exit %d (ended %v), want 0 after slept-ok; terminal shows %q", code, ok, bare.out.String())
	}
	for _, m := range termModes {
		t.Run(m.name+"/ctrl-z", func(t *testing.T) {
			id := tag(t)
			t.Cleanup(func() { killTagged(id) })
			term, cmd := runOnTerminal(t, w, m, "/bin/bash", "-c", script, id)
			if !term.waitFor("ready", 1, 30*time.Second) {
				exitOf(cmd, 0)
				t.Fatalf("never ready; terminal shows %q", term.out.String())
			}
			term.write(t, "\x1a")
			code, ok := exitOf(cmd, 30*time.Second)
			if !ok {
				t.Fatalf("Ctrl-Z: the run never ended (the program was stopped and nothing continued it); terminal shows %q", term.out.String())
			}
			if code != 0 || !term.waitFor("slept-ok", 1, 5*time.Second) {
				t.Errorf("Ctrl-Z: exit %d, want 0 after slept-ok as without the helper; terminal shows %q", code, term.out.String())
			}
			logWarm(t, m, term.out.String())
		})
		t.Run(m.name+"/winch-and-ctrl-c", func(t *testing.T) {
			id := tag(t)
			t.Cleanup(func() { killTagged(id) })
			term, cmd := runOnTerminal(t, w, m, "/bin/sh", "-c",
				`trap 'echo "winch $(stty size)"' WINCH; echo ready; while :; do sleep 0.1; done`, id)
			if !term.waitFor("ready", 1, 30*time.Second) {
				exitOf(cmd, 0)
				t.Fatalf("never ready; terminal shows %q", term.out.String())
			}
			term.write(t, "\x1a")
			if err := pty.Setsize(term.master, &pty.Winsize{Rows: 30, Cols: 100}); err != nil {
				t.Fatal(err)
			}
			if !term.waitFor("winch 30 100", 1, 20*time.Second) {
				t.Errorf("SIGWINCH after a Ctrl-Z: never reached the program (processes: %s); terminal shows %q", tagged(id), term.out.String())
			}
			term.write(t, "\x03")
			code, ok := exitOf(cmd, 30*time.Second)
			if !ok {
				t.Fatalf("Ctrl-C: the run never ended; terminal shows %q", term.out.String())
			}
			if code != 130 {
				t.Errorf("Ctrl-C: exit %d, want 130; terminal shows %q", code, term.out.String())
			}
			// Once: the terminal signals the whole foreground group, the
			// program included; the helper passes none of it on again.
			if n := strings.Count(term.out.String(), "winch "); n != 1 {
				t.Errorf("SIGWINCH: the program saw %d, want 1; terminal shows %q", n, term.out.String())
			}
			logWarm(t, m, term.out.String())
		})
	}
}

// TestTerminalNotOpenedWithoutIt: in an MCP server's shape (stdin, stdout
// and stderr are pipes; the caller's terminal is still its controlling
// terminal; no new session of its own), the program can open neither
// /dev/tty nor the terminal's own name: it has no controlling terminal (a
// session of its own) and the caller's pty is not in its /dev. Without the
// helper, both open.
func TestTerminalNotOpenedWithoutIt(t *testing.T) {
	w := newWorkspace(t)
	term := openTerminal(t)
	name, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", term.slave.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	probeBoth := []string{"/bin/sh", "-c", `"$0" ttyopen /dev/tty; "$0" ttyopen "$1"`, probe, name}
	// The caller: a session leader on the terminal that runs its child
	// (the helper, or the program bare) with pipes, in its own session and
	// group, as VT Code runs an MCP server from the user's terminal.
	run := func(t *testing.T, env []string, argv ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command("/bin/sh", append([]string{"-c", `exec 3>&-; "$@"`, "sh"}, argv...)...)
		cmd.Env, cmd.Dir = env, w.root
		var out, errs bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`+"\n"), &out, &errs
		cmd.ExtraFiles = []*os.File{term.slave}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		started.Store(cmd.Process.Pid, true)
		code, ok := exitOf(cmd, 60*time.Second)
		if !ok {
			t.Fatalf("%v did not end", argv)
		}
		return out.String(), errs.String(), code
	}
	if out, _, code := run(t, termEnv(w), probeBoth...); code != 0 || out != "ok\nok\n" {
		t.Fatalf("bare: exit %d, stdout %q: want both opens to succeed (the test's terminal is the controlling one)", code, out)
	}
	for _, m := range termModes {
		t.Run(m.name, func(t *testing.T) {
			args := m.args(t, w, probeBoth...)
			env := termEnv(w, m.env...)
			if m.prime {
				for try := 0; try < 3; try++ {
					if _, stderr, _ := run(t, env, append(append([]string{binary}, args[:len(args)-len(probeBoth)]...), "/bin/true")...); strings.Contains(stderr, warmStored) {
						break
					}
				}
			}
			out, stderr, code := run(t, env, append([]string{binary}, args...)...)
			if m.prime && !strings.Contains(stderr, "carrying out the stored recipe") {
				t.Logf("%s: the run was not the warm path's: %q", m.name, stderr)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || lines[0] != "ENXIO" || lines[1] == "ok" {
				t.Errorf("exit %d, stdout %q: want /dev/tty to fail with ENXIO (no controlling terminal) and %s not to open", code, out, name)
			}
		})
	}
}

// TestTerminalLeftAsItWas: on the caller's terminal, the program cannot set
// its line discipline (N_NULL would leave the user's shell dead) or its
// exclusive mode (every later open of it, by ssh, sudo or git's prompts,
// would fail with EBUSY): both are refused with EPERM. What a program may
// change for itself, its settings (stty -echo) and its file status flags
// (O_NONBLOCK, shared with the caller's shell), is put back when the run
// ends.
func TestTerminalLeftAsItWas(t *testing.T) {
	w := newWorkspace(t)
	nobody := uint32(65534)
	for _, m := range termModes {
		t.Run(m.name, func(t *testing.T) {
			id := tag(t)
			t.Cleanup(func() { killTagged(id) })
			script := `"$0" tiocsetd 27; "$0" tiocexcl; "$0" nonblock; stty -echo; echo done`
			term, cmd := runOnTerminal(t, w, m, "/bin/sh", "-c", script, probe, id)
			name, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", term.slave.Fd()))
			if err != nil {
				t.Fatal(err)
			}
			code, ok := exitOf(cmd, 60*time.Second)
			if !ok {
				t.Fatalf("the run never ended; terminal shows %q", term.out.String())
			}
			term.waitFor("done", 1, 10*time.Second)
			if code != 0 {
				t.Errorf("exit %d, want 0; terminal shows %q", code, term.out.String())
			}
			shown := term.out.String()
			if !strings.Contains(shown, "EPERM\r\nEPERM\r\nok\r\n") || !strings.Contains(shown, "done") {
				t.Errorf("want TIOCSETD and TIOCEXCL refused with EPERM, O_NONBLOCK set; terminal shows %q", shown)
			}
			fd := int(term.slave.Fd())
			if ld, err := unix.IoctlGetInt(fd, unix.TIOCGETD); err != nil || ld != 0 {
				t.Errorf("line discipline after the run: %d (%v), want N_TTY (0)", ld, err)
			}
			if excl, err := unix.IoctlGetInt(fd, unix.TIOCGEXCL); err != nil || excl != 0 {
				t.Errorf("exclusive mode after the run: %d (%v), want 0", excl, err)
			}
			// A new open by a process without CAP_SYS_ADMIN (which
			// exclusive mode does not stop).
			if err := os.Chown(name, int(nobody), int(nobody)); err != nil {
				t.Fatal(err)
			}
			opener := exec.Command("/bin/sh", "-c", `exec 3<>"$0"`, name)
			opener.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
			if out, err := opener.CombinedOutput(); err != nil {
				t.Errorf("a new open of %s after the run: %v %s", name, err, out)
			}
			if tio, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil || tio.Lflag&unix.ECHO == 0 {
				t.Errorf("terminal settings after the run: echo off (%v), want them as they were", err)
			}
			if fl, err := unix.FcntlInt(term.slave.Fd(), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
				t.Errorf("file status flags after the run: %#x (%v), want O_NONBLOCK clear as it was", fl, err)
			}
			logWarm(t, m, shown)
		})
	}
}

// TestTerminalJobControlFromShell: an interactive bash on a terminal runs
// the helper as a job, and job control is a plain exec's: Ctrl-Z stops the
// job and gives the shell its terminal back (jobs lists it stopped), bg
// runs it in the background until it reads the terminal (the kernel stops
// it for that: Stopped (tty input)), fg brings it back to read a line, and
// its exit status is its own. A stop and continue of the job's process
// group from outside (kill -STOP/-CONT) stops and resumes the program.
func TestTerminalJobControlFromShell(t *testing.T) {
	w := newWorkspace(t)
	// The first, without the helper: what bash shows of a plain exec.
	for _, m := range append([]termMode{{name: "bare"}}, termModes...) {
		t.Run(m.name, func(t *testing.T) {
			id := tag(t)
			t.Cleanup(func() { killTagged(id) })
			term := openTerminal(t)
			bash := term.lead(t, termEnv(w), w.root, "/bin/bash", "--norc", "--noprofile", "-i")
			defer exitOf(bash, 0)
			if !term.waitFor("$ ", 1, 20*time.Second) {
				t.Fatalf("no prompt; terminal shows %q", term.out.String())
			}
			quote := func(args []string) string {
				q := make([]string, len(args))
				for i, a := range args {
					q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
				}
				return strings.Join(q, " ")
			}
			env := ""
			for _, e := range m.env {
				env += e + " "
			}
			program := []string{"/bin/sh", "-c", `echo "$((6*7))-started"; read line; echo "got-$line"`, id}
			job := quote(append([]string{binary}, m.args(t, w, program...)...))
			if m.name == "bare" {
				job = quote(program)
			}
			if m.prime {
				prime := quote(append([]string{binary}, m.args(t, w, "/bin/true")...))
				term.write(t, env+prime+"; echo primed-$?\n")
				if !term.waitFor("primed-0", 1, 60*time.Second) {
					t.Fatalf("priming: terminal shows %q", term.out.String())
				}
			}
			step := func(what, input, want string, count int) {
				t.Helper()
				if input != "" {
					term.write(t, input)
				}
				if !term.waitFor(want, count, 30*time.Second) {
					t.Fatalf("%s: never saw %q (%d times); terminal shows %q", what, want, count, term.out.String())
				}
			}
			// foreground waits until the job (not bash) has the terminal.
			foreground := func(what string) int {
				t.Helper()
				pgid := 0
				isoPoll(30*time.Second, func() bool {
					fg, err := unix.IoctlGetInt(int(term.master.Fd()), unix.TIOCGPGRP)
					pgid = fg
					return err == nil && fg != bash.Process.Pid
				})
				if pgid == 0 || pgid == bash.Process.Pid {
					t.Fatalf("%s: the job never had the terminal's foreground; terminal shows %q", what, term.out.String())
				}
				return pgid
			}
			step("start", env+job+"\n", "42-started", 1)
			step("Ctrl-Z", "\x1a", "Stopped", 1)
			step("jobs", "jobs\n", "Stopped", 2)
			// In the background it reads the terminal: the kernel stops the
			// whole job with SIGTTIN, which bash's jobs then lists (bg
			// marked it running).
			term.write(t, "bg\n")
			if !isoPoll(30*time.Second, func() bool {
				if strings.Count(term.out.String(), "Stopped") >= 3 {
					return true
				}
				term.write(t, "jobs\n")
				return false
			}) {
				t.Fatalf("bg: the job never stopped for tty input; terminal shows %q", term.out.String())
			}
			term.write(t, "fg\n")
			foreground("fg")
			step("input", "hello\n", "got-hello", 1)
			step("exit status", "echo rc=$?\n", "rc=0", 1)

			// kill -STOP and -CONT of the job's group from outside.
			step("start again", env+job+"\n", "42-started", 2)
			pgid := foreground("start again")
			stops := strings.Count(term.out.String(), "Stopped")
			_ = unix.Kill(-pgid, unix.SIGSTOP)
			if !isoPoll(20*time.Second, func() bool { return processState(id, "sh") == "T" }) {
				t.Errorf("kill -STOP of the job's group: the program is %q, want stopped (T)", processState(id, "sh"))
			}
			step("stopped by a signal", "", "Stopped", stops+1)
			_ = unix.Kill(-pgid, unix.SIGCONT)
			term.write(t, "fg\n")
			foreground("fg after the continue")
			step("input again", "again\n", "got-again", 1)
			step("exit status again", "echo rc=$?\n", "rc=0", 2)
			logWarm(t, m, term.out.String())
		})
	}
}
