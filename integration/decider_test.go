package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// startDecider starts a resident decider (sandbox-executable decider) on a
// socket in dir and returns the socket; the test's cleanup stops it.
func startDecider(t *testing.T, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "decider.sock")
	cmd := exec.Command(realBinary, "decider", sock)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started.Store(cmd.Process.Pid, true)
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if stderr.Len() > 0 {
			t.Errorf("the decider said: %s", stderr.String())
		}
		if _, err := os.Lstat(sock); err == nil {
			t.Errorf("the decider left its socket behind")
		}
	})
	if !isoPoll(20*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }) {
		t.Fatalf("the decider never listened: %s", stderr.String())
	}
	return sock
}

// invocations makes each run below an invocation of its own: a first run.
var invocations atomic.Int64

func newInvocation() string {
	return fmt.Sprintf("SE_IT_INVOCATION=%d-%d", os.Getpid(), invocations.Add(1))
}

// deciderRun is warmRunWatched for a first run that asks the decider at
// sock: again (three times more at most) while it was Go's because a sweep
// fell due (warmRunAgain says why that happens) or the answer came too
// late for it (an emulated guest on a busy host), each time a new
// invocation.
func deciderRun(t *testing.T, w *workspace, policy, sock, script string) (result, int, string) {
	t.Helper()
	var r result
	var threads int
	var said string
	for i := 0; i < 4; i++ {
		r, threads, said = warmRunSaid(t, w, policy, []string{"SANDBOX_EXECUTABLE_DECIDER=" + sock, newInvocation()}, script)
		if threads == 1 || !retriable(said) {
			break
		}
	}
	return r, threads, said
}

// retriable reports whether a first run that asked the decider was Go's for
// a reason the test did not cause.
func retriable(said string) bool {
	return strings.Contains(said, "sweep due") || strings.Contains(said, "no answer from the decider")
}

// TestDeciderCarriesOutFirstRuns: with a resident decider to ask, the first
// run of an invocation is carried out from the recipe the decider stored,
// without the Go runtime (one thread), and it is confined as a run Go
// decided itself is: the same answers to reading a secret, writing outside
// the roots and writing inside. Before the decider, every first run was
// Go's.
func TestDeciderCarriesOutFirstRuns(t *testing.T) {
	for _, policy := range []string{"workspace_write", "read_only"} {
		t.Run(policy, func(t *testing.T) {
			w := newWorkspace(t)
			sock := startDecider(t, t.TempDir())
			pol := roPolicy
			if policy == "workspace_write" {
				pol = wsPolicy(t, w.root)
			}
			settle()
			script := "cat " + w.home + "/.aws/credentials; echo pwned > " + w.out + "/victim; echo written > " + w.root + "/written; echo done"
			for i := 0; i < 3; i++ {
				r, threads, said := deciderRun(t, w, pol, sock, script)
				if threads != 1 || !strings.Contains(said, "the decider stored the recipe") {
					t.Fatalf("run %d: not carried out from the decider's recipe (%d threads): %s", i, threads, said)
				}
				cold, coldThreads := warmRun(t, w, pol, []string{"SANDBOX_EXECUTABLE_WARM=off"}, script)
				if coldThreads == 1 {
					t.Fatalf("the run with the warm path off had one thread")
				}
				if r.code != cold.code || r.stdout != cold.stdout || r.stderr != cold.stderr {
					t.Errorf("run %d: from the decider's recipe %v, decided by Go %v", i, r, cold)
				}
				if got := readFile(t, filepath.Join(w.out, "victim")); got != "original\n" {
					t.Fatalf("a write outside the roots went through: %q", got)
				}
			}
		})
	}
}

// TestDeciderDecidesInTheRunsPlace: the decider decides as the run that
// asks would, in its working directory and with its environment, not in
// its own: under the built-in default (no policy) the working directory is
// the writable root, and HOME's secrets are unreadable. Two runs from
// different directories, with different homes, each write their own
// directory only, and cannot read their own HOME's secret; a decider that
// decided in its own place would have granted its own directory and
// denied its own HOME's secrets.
func TestDeciderDecidesInTheRunsPlace(t *testing.T) {
	a, b := newWorkspace(t), newWorkspace(t)
	sock := startDecider(t, t.TempDir())
	settle()
	for _, c := range []struct{ w, other *workspace }{{a, b}, {b, a}} {
		script := fmt.Sprintf("echo mine > %s/mine; echo theirs > %s/theirs; cat %s/.aws/credentials; echo end",
			c.w.root, c.other.root, c.w.home)
		var out []byte
		var said string
		for try := 0; try < 4; try++ {
			cmd := exec.Command(binary, "--", "/bin/sh", "-c", script)
			cmd.Dir = c.w.root
			cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", "SANDBOX_EXECUTABLE_WARM=debug",
				"SANDBOX_EXECUTABLE_DECIDER=" + sock, newInvocation()}, c.w.env()...)
			var err error
			if out, err = cmd.CombinedOutput(); err != nil {
				t.Logf("%s: %v", c.w.root, err)
			}
			if said = warmSaid(string(out)); !retriable(said) {
				break
			}
		}
		if !strings.Contains(said, "the decider stored the recipe") {
			t.Errorf("%s: not decided by the decider: %s", c.w.root, said)
		}
		if _, err := os.Stat(filepath.Join(c.w.root, "mine")); err != nil {
			t.Errorf("%s: the run could not write its working directory: %s", c.w.root, out)
		}
		if _, err := os.Stat(filepath.Join(c.other.root, "theirs")); err == nil {
			t.Errorf("%s: the run wrote the other directory: %s", c.w.root, out)
		}
		if strings.Contains(string(out), "aws secret") {
			t.Errorf("%s: a secret was read: %s", c.w.root, out)
		}
	}
}

// TestDeciderOutOfTheProgramsReach: a run that asks a decider denies its
// program the decider's socket, in both filesystem modes, although the
// socket lies in the writable root; a run that does not ask leaves it
// where it is (so the socket is reachable there, and the denial is the
// helper's).
func TestDeciderOutOfTheProgramsReach(t *testing.T) {
	w := newWorkspace(t)
	sock := startDecider(t, w.root)
	pol := wsPolicy(t, w.root)
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			args := append(append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol}, fsOpts(t, mode)...), "--", probe, "unixconnect", sock)
			asks := run(t, runOpts{env: append(w.env(), "SANDBOX_EXECUTABLE_DECIDER="+sock), dir: w.root}, args...)
			if asks.code == 0 || strings.Contains(asks.stdout, "ok") {
				t.Errorf("the program of a run that asks the decider reached its socket: %v", asks)
			}
			other := run(t, runOpts{env: w.env(), dir: w.root}, args...)
			if other.code != 0 || !strings.Contains(other.stdout, "ok") {
				t.Errorf("the socket was out of reach of a run that does not ask (the test shows nothing): %v", other)
			}
		})
	}
}

// TestDeciderAnswersOnlyItsOwn: the decider decides nothing for a process
// of another user, nor for one whose no_new_privs or seccomp filters are
// not its own (every sandboxed program's are), even where its socket lets
// them connect: their runs decide themselves, and run. (Were it to decide
// for them, it would store under its own key, and they would find nothing
// under theirs: the answer would say it stored.)
func TestDeciderAnswersOnlyItsOwn(t *testing.T) {
	isoNeedRoot(t)
	isoNeedTools(t, "setpriv")
	w := isoWorkspace(t, isoNobody)
	sock := startDecider(t, w.root)
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	pol := wsPolicy(t, w.root)
	args := []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol, "--", "/bin/echo", "ran"}
	env := []string{"SANDBOX_EXECUTABLE_WARM=debug", "SANDBOX_EXECUTABLE_DECIDER=" + sock}
	for _, c := range []struct {
		name string
		o    runOpts
	}{
		{"another user", runOpts{cred: isoNobody.cred}},
		{"no_new_privs", runOpts{via: []string{"setpriv", "--no-new-privs"}}},
	} {
		c.o.dir, c.o.env, c.o.unprimed = w.root, append(append(w.env(), env...), newInvocation()), true
		r := run(t, c.o, args...)
		if !strings.Contains(r.stderr, "the decider stored nothing") || r.stdout != "ran\n" {
			t.Errorf("%s: %v", c.name, r)
		}
	}
	// A helper run inside a sandbox that does not ask the decider, so
	// that its program reaches the socket in the writable root.
	outer := append(append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol}, fsOpts(t, "landlock")...), "--", "env")
	inner := append(append(env, newInvocation(), realBinary), args...)
	// (The outer run says what its warm path did too, so that the
	// suite's decider mode leaves this run as it is.)
	r := run(t, runOpts{dir: w.root, env: append(w.env(), "SANDBOX_EXECUTABLE_WARM=debug"), unprimed: true}, append(outer, inner...)...)
	if !strings.Contains(r.stderr, "the decider stored nothing") {
		t.Errorf("a sandboxed run: %v", r)
	}
}

// TestDeciderGoneIsNoMatter: a run whose decider is not there (never
// started, or stopped) decides itself and runs.
func TestDeciderGoneIsNoMatter(t *testing.T) {
	w := newWorkspace(t)
	pol := wsPolicy(t, w.root)
	sock := filepath.Join(t.TempDir(), "none.sock")
	r, threads, said := warmRunSaid(t, w, pol, []string{"SANDBOX_EXECUTABLE_DECIDER=" + sock, newInvocation()}, "echo ran")
	if r.code != 0 || r.stdout != "ran\n" || threads == 1 || !strings.Contains(said, "no answer from the decider") {
		t.Errorf("%v (%d threads): %s", r, threads, said)
	}
}
