package spawn

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// run starts req with stdout captured in a file and waits for the child.
func run(t *testing.T, req *Request) (status unix.WaitStatus, out string, err error) {
	t.Helper()
	f, ferr := os.CreateTemp(t.TempDir(), "out")
	if ferr != nil {
		t.Fatal(ferr)
	}
	defer f.Close()
	if req.CgroupFD == 0 {
		req.CgroupFD = -1
	}
	if req.RulesetFD == 0 {
		req.RulesetFD = -1
	}
	if req.NotifySock == 0 {
		req.NotifySock = -1
	}
	// The child's stdout is the temp file: dup it onto a kept fd and let a
	// shell redirect, so the test process's own stdout is left alone.
	req.KeepFDs = append(req.KeepFDs, int(f.Fd()))
	p, err := Start(req)
	if p == nil {
		return 0, "", err
	}
	if p.PidFD >= 0 {
		defer unix.Close(p.PidFD)
	}
	if _, werr := unix.Wait4(p.Pid, &status, 0, nil); werr != nil {
		t.Fatalf("wait4: %v", werr)
	}
	b, _ := os.ReadFile(f.Name())
	return status, string(b), err
}

func TestExitStatusAndOutput(t *testing.T) {
	f, _ := os.CreateTemp(t.TempDir(), "x")
	defer f.Close()
	fd := int(f.Fd())
	req := &Request{Paths: []string{"/bin/bash"}, Argv: []string{"bash", "-c", "echo hello >&" + strconv.Itoa(fd) + "; exit 7"}, Env: []string{"PATH=/bin"}, KeepFDs: []int{fd}}
	st, _, err := run(t, req)
	if err != nil {
		t.Fatal(err)
	}
	if st.ExitStatus() != 7 {
		t.Fatalf("status %v, want exit 7", st)
	}
	b, _ := os.ReadFile(f.Name())
	if string(b) != "hello\n" {
		t.Fatalf("output %q", b)
	}
}

func TestNotFoundAndNotExecutable(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		paths []string
		code  int
		errno syscall.Errno
	}{
		{[]string{filepath.Join(dir, "missing")}, 127, unix.ENOENT},
		{[]string{noexec}, 126, unix.EACCES},
		// execvp semantics: EACCES is remembered, a later candidate still runs.
		{[]string{noexec, "/bin/true"}, 0, 0},
		{[]string{filepath.Join(dir, "missing"), noexec}, 126, unix.EACCES},
	} {
		st, _, err := run(t, &Request{Paths: tc.paths, Argv: []string{"x"}})
		if tc.code == 0 {
			if err != nil || st.ExitStatus() != 0 {
				t.Errorf("%v: err %v status %v", tc.paths, err, st)
			}
			continue
		}
		var se *Error
		if !errors.As(err, &se) || se.Step != StepExec || se.Errno != tc.errno || se.ExitCode() != tc.code {
			t.Errorf("%v: err %v, want exec %v", tc.paths, err, tc.errno)
		}
		if st.ExitStatus() != tc.code {
			t.Errorf("%v: child exit %v, want %d", tc.paths, st, tc.code)
		}
	}
}

func TestShellFallbackForScriptWithoutShebang(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("exit 5\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, _, err := run(t, &Request{Paths: []string{script}, Argv: []string{"script"}, ShellFallback: true})
	if err != nil || st.ExitStatus() != 5 {
		t.Fatalf("err %v status %v, want exit 5 through /bin/sh", err, st)
	}
}

func TestFDsAboveTwoAreClosedUnlessKept(t *testing.T) {
	dir := t.TempDir()
	leak, err := os.Open("/etc/hostname")
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	// Not close-on-exec, as an fd inherited from a careless caller would be.
	if _, err := unix.FcntlInt(leak.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	out, _ := os.Create(filepath.Join(dir, "out"))
	defer out.Close()
	script := "ls /proc/self/fd >&" + strconv.Itoa(int(out.Fd()))
	_, _, err = run(t, &Request{Paths: []string{"/bin/bash"}, Argv: []string{"bash", "-c", script}, KeepFDs: []int{int(out.Fd())}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	fds := strings.Fields(string(b))
	for _, fd := range fds {
		if fd == strconv.Itoa(int(leak.Fd())) {
			t.Fatalf("fd %d leaked into the child: %v", leak.Fd(), fds)
		}
	}
	if !strings.Contains(" "+strings.Join(fds, " ")+" ", " "+strconv.Itoa(int(out.Fd()))+" ") {
		t.Fatalf("kept fd %d missing in the child: %v", out.Fd(), fds)
	}
}

func TestRlimitAndNoNewPrivs(t *testing.T) {
	dir := t.TempDir()
	out, _ := os.Create(filepath.Join(dir, "out"))
	defer out.Close()
	// Limits no default has (a soft core limit of 0 is common, so 0 would
	// prove nothing): soft and hard, read back as whole lines.
	script := "ulimit -S -n; ulimit -H -n; grep NoNewPrivs /proc/self/status"
	req := &Request{Paths: []string{"/bin/bash"}, Argv: []string{"bash", "-c", "{ " + script + "; } >&" + strconv.Itoa(int(out.Fd()))},
		Rlimits: []Rlimit{{Resource: unix.RLIMIT_NOFILE, Cur: 77, Max: 99}}, KeepFDs: []int{int(out.Fd())}}
	if _, _, err := run(t, req); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	if got, want := string(b), "77\n99\nNoNewPrivs:\t1\n"; got != want {
		t.Fatalf("child saw %q, want %q", got, want)
	}
}

func TestSetupFailureIsReportedWithStep(t *testing.T) {
	// An op that must fail: chdir into a missing directory.
	p, err := Start(&Request{Paths: []string{"/bin/true"}, Argv: []string{"true"}, CgroupFD: -1, RulesetFD: -1, NotifySock: -1,
		Ops: []Op{Chdir("/nonexistent/dir", "chdir /nonexistent/dir")}})
	var se *Error
	if !errors.As(err, &se) || se.Step != StepOp || se.Errno != unix.ENOENT || se.Detail != "chdir /nonexistent/dir" || se.ExitCode() != 125 {
		t.Fatalf("err %v", err)
	}
	var st unix.WaitStatus
	if _, err := unix.Wait4(p.Pid, &st, 0, nil); err != nil || st.ExitStatus() != 125 {
		t.Fatalf("wait: %v %v", err, st)
	}
}

// TestListenerInTheChildsNetworkNamespace: the child brings up the loopback
// of a fresh network namespace, listens there and hands the socket over; the
// program, inside, reaches it, and the test, outside, accepts.
func TestListenerInTheChildsNetworkNamespace(t *testing.T) {
	pair := proxyPair(t)
	script := `exec 3<>/dev/tcp/127.0.0.1/3128 && echo hello-from-inside >&3 && read -r reply <&3 && test "$reply" = ok`
	p, err := Start(&Request{Paths: []string{"/bin/bash"}, Argv: []string{"bash", "-c", script}, CgroupFD: -1, RulesetFD: -1, NotifySock: -1,
		NamespaceFlags: unix.CLONE_NEWNET,
		Ops:            []Op{LoopbackUp("lo up"), ListenAndHandOver(3128, "proxy listener")}, ProxySock: pair[1]})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := receiveFD(pair[0])
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.FileListener(os.NewFile(uintptr(fd), "listener"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	if line != "hello-from-inside\n" {
		t.Errorf("read %q", line)
	}
	c.Write([]byte("ok\n"))
	c.Close()
	var st unix.WaitStatus
	if _, err := unix.Wait4(p.Pid, &st, 0, nil); err != nil || st.ExitStatus() != 0 {
		t.Errorf("program: %v %v", err, st)
	}
	if p.PidFD >= 0 {
		unix.Close(p.PidFD)
	}
}

func TestZeroValueDescriptorsRefused(t *testing.T) {
	_, err := Start(&Request{Paths: []string{"/bin/true"}, Argv: []string{"true"}, CgroupFD: -1, RulesetFD: -1})
	if err == nil || !strings.Contains(err.Error(), "NotifySock is 0") {
		t.Errorf("err %v", err)
	}
}
