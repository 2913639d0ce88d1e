package spawn

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/landlock"
)

// TestScopeConstants: what scope.c knows before Go runs is what package
// landlock's table and the kernel's header say.
func TestScopeConstants(t *testing.T) {
	if !landlock.Supports(scopeMinABI, landlock.FeatScoping) || landlock.Supports(scopeMinABI-1, landlock.FeatScoping) {
		t.Errorf("SE_SCOPE_MIN_ABI %d is not the ABI that added scoping", scopeMinABI)
	}
	if scopeAbstractUnix != unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET {
		t.Errorf("SE_SCOPE_ABSTRACT_UNIX %#x, the kernel's %#x", scopeAbstractUnix, unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET)
	}
}

const scopeChildEnv = "SE_SCOPE_CHILD"

// abstractListener listens on the abstract name and returns its fd.
func abstractListener(t *testing.T, name string) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 4); err != nil {
		t.Fatal(err)
	}
	return fd
}

func abstractConnect(name string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + name})
}

// TestSupervisorScopeChild is the process TestSupervisorScope starts, with
// a "--" and a program after it: it reports whether it holds the domain,
// connects to the abstract socket the test made outside it, and to one it
// made itself.
func TestSupervisorScopeChild(t *testing.T) {
	outside := os.Getenv(scopeChildEnv)
	if outside == "" {
		t.Skip("run by TestSupervisorScope")
	}
	own := outside + "-own"
	l := abstractListener(t, own)
	defer unix.Close(l)
	t.Logf("scoped %t outside %v own %v", SupervisorScoped(), abstractConnect(outside), abstractConnect(own))
}

// TestSupervisorScope: a helper process started with "--" and a program
// holds the domain on a kernel with scoping, and then reaches no abstract
// socket made outside it but its own; one without "--" holds none.
func TestSupervisorScope(t *testing.T) {
	if landlock.ABI() < scopeMinABI {
		t.Skipf("Landlock ABI %d: no scoping", landlock.ABI())
	}
	name := "se-scope-test-" + strconv.Itoa(os.Getpid())
	l := abstractListener(t, name)
	defer unix.Close(l)
	run := func(args ...string) string {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestSupervisorScopeChild$", "-test.v", "-test.count=1"}, args...)...)
		cmd.Env = append(os.Environ(), scopeChildEnv+"="+name)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run("--", "program"); !strings.Contains(out, "scoped true outside "+syscall.EPERM.Error()+" own <nil>") {
		t.Errorf("with a program: %s", out)
	}
	if out := run(); !strings.Contains(out, "scoped false outside <nil> own <nil>") {
		t.Errorf("without one: %s", out)
	}
}
