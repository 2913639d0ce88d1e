package spawn

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
)

func TestExitStatusAndOutput(t *testing.T) {
	end := runRecipe(t, program(), []string{"/bin/sh", "-c", "echo hello; exit 7"}, runOpts{})
	if end.Code != 7 || end.Stdout != "hello\n" || end.Ret != nil {
		t.Fatalf("exit %d, output %q, returned %+v: want exit 7 and hello", end.Code, end.Stdout, end.Ret)
	}
}

// TestNotFoundAndNotExecutable: the exec's failures end the run with the
// codes of the recipe's exit rules, 127 and 126, and the PATH search is
// execvp's.
func TestNotFoundAndNotExecutable(t *testing.T) {
	dir := t.TempDir()
	noexecDir, runsDir, emptyDir := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, d := range []string{noexecDir, runsDir, emptyDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(noexecDir, "x"), []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runsDir, "x"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		path  []string
		argv0 string
		code  int
		errno syscall.Errno
	}{
		{"missing", nil, filepath.Join(dir, "missing"), 127, unix.ENOENT},
		{"below a file", nil, "/etc/passwd/x", 127, unix.ENOTDIR},
		{"not executable", nil, filepath.Join(noexecDir, "x"), 126, unix.EACCES},
		// execvp: EACCES is remembered, a later candidate still runs.
		{"a later candidate runs", []string{noexecDir, runsDir}, "x", 0, 0},
		{"missing, then not executable", []string{emptyDir, noexecDir}, "x", 126, unix.EACCES},
	} {
		r := program()
		if c.path != nil {
			r.PathDirs = c.path
		}
		end := runRecipe(t, r, []string{c.argv0}, runOpts{})
		if end.Code != c.code {
			t.Errorf("%s: exit %d, want %d", c.name, end.Code, c.code)
		}
		if c.code == 0 {
			continue
		}
		if end.Ret == nil || end.Ret.Reason != ReturnFailed || end.Ret.FailStep != StepExec || end.Ret.FailErrno != c.errno || end.Ret.ExitCode != c.code {
			t.Errorf("%s: returned %+v, want the exec failed with %v, code %d", c.name, end.Ret, c.errno, c.code)
		}
	}
}

// TestShellFallbackForScriptWithoutShebang: a script without "#!" runs
// through /bin/sh, as execvp runs it, where the recipe says so; otherwise
// it cannot be executed (ENOEXEC: 126).
func TestShellFallbackForScriptWithoutShebang(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, []byte("exit 5\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := program()
	r.ShellFallback = true
	if end := runRecipe(t, r, []string{script}, runOpts{}); end.Code != 5 {
		t.Errorf("with the fallback: exit %d (%+v), want 5 through /bin/sh", end.Code, end.Ret)
	}
	end := runRecipe(t, program(), []string{script}, runOpts{})
	if end.Code != 126 || end.Ret == nil || end.Ret.FailStep != StepExec || end.Ret.FailErrno != unix.ENOEXEC {
		t.Errorf("without it: exit %d, returned %+v; want 126, exec: ENOEXEC", end.Code, end.Ret)
	}
}

// TestFDsAboveTwoAreClosedUnlessKept: descriptors the helper inherited
// without close-on-exec, as from a careless caller, do not reach the
// program; those the recipe keeps do.
func TestFDsAboveTwoAreClosedUnlessKept(t *testing.T) {
	dir := t.TempDir()
	leak, err := os.Create(filepath.Join(dir, "leaked"))
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	kept, err := os.Create(filepath.Join(dir, "kept"))
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	r := program()
	r.KeepFDs = []int{4} // kept, after leaked at 3
	end := runRecipe(t, r, []string{"/bin/ls", "-l", "/proc/self/fd/"}, runOpts{extra: []*os.File{leak, kept}})
	if end.Code != 0 {
		t.Fatalf("exit %d (%+v): %s", end.Code, end.Ret, end.Stderr)
	}
	if strings.Contains(end.Stdout, leak.Name()) {
		t.Errorf("the inherited fd reached the program:\n%s", end.Stdout)
	}
	if !strings.Contains(end.Stdout, "4 -> "+kept.Name()) {
		t.Errorf("the kept fd 4 is missing in the program:\n%s", end.Stdout)
	}
}

func TestRlimitAndNoNewPrivs(t *testing.T) {
	r := program()
	// Limits no default has (a soft core limit of 0 is common, so 0 would
	// prove nothing): soft and hard, read back as whole lines.
	r.Rlimits = []Rlimit{{Resource: unix.RLIMIT_NOFILE, Cur: 77, Max: 99}}
	end := runRecipe(t, r, []string{"/bin/bash", "-c", "ulimit -S -n; ulimit -H -n; grep NoNewPrivs /proc/self/status"}, runOpts{})
	if want := "77\n99\nNoNewPrivs:\t1\n"; end.Code != 0 || end.Stdout != want {
		t.Fatalf("exit %d, the program saw %q, want %q", end.Code, end.Stdout, want)
	}
}

// TestSetupFailureIsReportedWithStep: an operation that fails stops the
// run before the program, with its step, errno and words, and code 125.
func TestSetupFailureIsReportedWithStep(t *testing.T) {
	r := program()
	r.Ops = []Op{Chdir("/nonexistent/dir", "chdir /nonexistent/dir")}
	end := runRecipe(t, r, []string{"/bin/echo", "ran"}, runOpts{})
	se := end.failure(r, "/bin/echo")
	if end.Code != 125 || se == nil || end.Ret.Reason != ReturnFailed || se.Step != StepOp || se.Errno != unix.ENOENT || se.Detail != "chdir /nonexistent/dir" {
		t.Fatalf("exit %d, failure %v (%+v): want 125, setup: chdir /nonexistent/dir: ENOENT", end.Code, se, end.Ret)
	}
	if end.Stdout != "" {
		t.Errorf("the program ran: %q", end.Stdout)
	}
}

// TestListenerInTheChildsNetworkNamespace: the child brings up the loopback
// of a fresh network namespace, listens there and hands the socket over;
// the program, inside, reaches it, and Go, outside, accepts.
func TestListenerInTheChildsNetworkNamespace(t *testing.T) {
	r := networkRecipe(t, ListenAndHandOver(3128, "proxy listener"))
	script := `exec 3<>/dev/tcp/127.0.0.1/3128 && echo hello-from-inside >&3 && read -r reply <&3 && test "$reply" = ok`
	end := runRecipe(t, r, []string{"/bin/bash", "-c", script}, runOpts{serve: "proxy-echo"})
	if end.Code != 0 || !strings.Contains(end.Stderr, `proxy read "hello-from-inside\n"`) {
		t.Fatalf("exit %d (%+v), Go's side said %q: want the line read and the program's exit 0", end.Code, end.Ret, end.Stderr)
	}
}

// networkRecipe is a plain child in a network namespace of its own with
// its loopback up, listening with listen, whose listener goes to Go.
func networkRecipe(t *testing.T, listen Op) *Recipe {
	t.Helper()
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs CAP_SYS_ADMIN for a network namespace")
	}
	r := program()
	r.NamespaceFlags = unix.CLONE_NEWNET
	r.Ops = []Op{LoopbackUp("lo up"), listen}
	r.Proxy, r.GoFromStart = true, true
	return r
}

// TestTrialReportsTheFailedStep: a trial's child that fails an operation
// is that failure, in the operation's words; one that succeeds exits 0.
// Neither runs a program.
func TestTrialReportsTheFailedStep(t *testing.T) {
	p, err := (&Trial{Ops: []Op{WriteFile("/nonexistent/file", "x", "write the file")}}).Start()
	var se *Error
	if !errors.As(err, &se) || se.Step != StepOp || se.Errno != unix.ENOENT || se.Detail != "write the file" {
		t.Errorf("failing trial: %v, want setup: write the file: ENOENT", err)
	}
	reapTrial(t, p)
	p, err = (&Trial{Ops: []Op{Chdir("/", "enter /")}}).Start()
	if err != nil {
		t.Errorf("trial: %v", err)
	}
	if st := reapTrial(t, p); st.ExitStatus() != 0 {
		t.Errorf("trial exited %v, want 0", st)
	}
}

// TestTrialHandsNothingOver: an operation that sends a descriptor has
// nobody to send it to in a trial, which is refused before any clone.
func TestTrialHandsNothingOver(t *testing.T) {
	p, err := (&Trial{Ops: []Op{OpenAndHandOver("/", "layers")}}).Start()
	if p != nil || err == nil || !strings.Contains(err.Error(), "layers") {
		t.Fatalf("child %v, err %v: want a refusal naming the operation", p, err)
	}
}

func reapTrial(t *testing.T, p *Process) unix.WaitStatus {
	t.Helper()
	var st unix.WaitStatus
	if p == nil {
		t.Fatal("no child")
	}
	if p.PidFD >= 0 {
		defer unix.Close(p.PidFD)
	}
	if _, err := unix.Wait4(p.Pid, &st, unix.WALL, nil); err != nil {
		t.Fatal(err)
	}
	return st
}
