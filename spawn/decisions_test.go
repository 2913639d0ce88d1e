package spawn

import (
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The tests here show that what Go decides for the runner and its stage is
// what they do: each changes one decision of a recipe away from its
// default and watches the kernel object or the exit status that comes out.

// TestExitCodesComeFromGo: a run whose child failed ends with the codes of
// Go's exit rules (which every recipe carries), not with codes of the
// runner's or the stage's own.
func TestExitCodesComeFromGo(t *testing.T) {
	saved := exitRules
	t.Cleanup(func() { exitRules = saved })
	exitRules = []exitRule{{StepExec, unix.ENOENT, 71}, {StepOp, 0, 72}, {StepNone, 0, 73}}
	setup := program()
	setup.Ops = []Op{Chdir("/nonexistent/dir", "chdir")}
	for _, c := range []struct {
		name string
		r    *Recipe
		prog string
		want int
	}{
		{"not found", program(), "/nonexistent/prog", 71},
		{"setup", setup, "/bin/true", 72},
		{"not executable", program(), "/etc/passwd", 73},
	} {
		end := runRecipe(t, c.r, []string{c.prog}, runOpts{})
		if end.Code != c.want || end.Ret == nil || end.Ret.ExitCode != c.want {
			t.Errorf("%s: exit %d, returned %+v; want %d", c.name, end.Code, end.Ret, c.want)
		}
	}
}

// TestListenerAddressAndBacklogFromGo: the handed-over socket listens on
// the address and with the backlog the operation names.
func TestListenerAddressAndBacklogFromGo(t *testing.T) {
	r := networkRecipe(t, ListenOnAndHandOver(netip.MustParseAddr("127.0.0.2"), 4711, 7, "listener"))
	end := runRecipe(t, r, []string{"/bin/true"}, runOpts{serve: "listener-info"})
	// 10: TCP_LISTEN.
	if want := "listening on 127.0.0.2:4711 state 10 backlog 7\n"; end.Code != 0 || end.Stderr != want {
		t.Fatalf("exit %d (%+v), Go saw %q; want %q", end.Code, end.Ret, end.Stderr, want)
	}
}

// TestCloneFallbackIsGosChoice: where clone3 is refused (ENOSYS, as an old
// kernel or a container's filter answers), the child, and an init's
// program, come from the legacy clone exactly where the recipe allows it;
// where it does not, nothing runs.
func TestCloneFallbackIsGosChoice(t *testing.T) {
	refuse := runOpts{refuseNr: unix.SYS_CLONE3, refuseErrno: int(unix.ENOSYS)}
	direct := func(fallback bool) *Recipe {
		r := program()
		r.CloneFallback = fallback
		return r
	}
	type cloneCase struct {
		name  string
		r     *Recipe
		step  Step // 0: the program runs
		errno syscall.Errno
		code  int
	}
	cases := []cloneCase{
		{"child, fallback allowed", direct(true), 0, 0, 0},
		{"child, no fallback", direct(false), StepClone, unix.ENOSYS, 125},
	}
	if os.Geteuid() == 0 {
		underInit := func(fallback, progFallback bool) *Recipe {
			r := program()
			r.Init, r.Pdeathsig, r.NamespaceFlags = true, unix.SIGKILL, unix.CLONE_NEWPID
			r.CloneFallback, r.ProgCloneFallback = fallback, progFallback
			return r
		}
		cases = append(cases, []cloneCase{
			{"init and program, fallback allowed", underInit(true, true), 0, 0, 0},
			{"init, no fallback", underInit(false, true), StepClone, unix.ENOSYS, 125},
			{"init's program, no fallback", underInit(true, false), StepInit, unix.ENOSYS, 125},
		}...)
	}
	for _, c := range cases {
		end := runRecipe(t, c.r, []string{"/bin/sh", "-c", "echo ran"}, refuse)
		if c.step == 0 {
			if end.Code != 0 || end.Stdout != "ran\n" {
				t.Errorf("%s: exit %d, output %q (%+v): want the program run", c.name, end.Code, end.Stdout, end.Ret)
			}
			continue
		}
		if end.Code != c.code || end.Ret == nil || end.Ret.FailStep != c.step || end.Ret.FailErrno != c.errno || strings.Contains(end.Stdout, "ran") {
			t.Errorf("%s: exit %d, output %q, returned %+v; want %s: %v, exit %d", c.name, end.Code, end.Stdout, end.Ret, c.step, c.errno, c.code)
		}
	}
}
