package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sandbox-executable/internal/testcap"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The helper's own traces on the host: the placeholders it makes for the
// protected names a workspace lacks (.git, .vtcode, .codex, .agents), and
// the private temp dir. Parallel runs share the placeholders; none of them
// may ever uncover a name another one's program is denied, and nothing may
// be left after the last one, however it ended.

// protectedNames are the names the workspace policy protects in a root.
var protectedNames = []string{".git", ".vtcode", ".codex", ".agents"}

// listing is `ls -A dir`, sorted.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// freshWorkspace is a workspace owned by u that lacks every protected name.
func freshWorkspace(t *testing.T, u isoUser) *workspace {
	t.Helper()
	w := isoWorkspace(t, u)
	for _, n := range protectedNames {
		if _, err := os.Lstat(filepath.Join(w.root, n)); err == nil {
			t.Fatalf("the workspace has %s already", n)
		}
	}
	return w
}

// helperCmd is the helper (through via, if given) running argv under the
// workspace policy in mode as u, with its output in files.
func helperCmd(t *testing.T, w *workspace, u isoUser, mode string, via []string, argv ...string) (*exec.Cmd, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "stdout")
	args := append(isoArgs(t, w, mode), argv...)
	cmd := exec.Command(binary, args...)
	if len(via) > 0 {
		cmd = exec.Command(via[0], append(append(via[1:], binary), args...)...)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append([]string{"LANG=C"}, isoEnv(w)...)
	cmd.Dir = w.root
	if u.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	}
	return cmd, out
}

// waitFile waits until path exists (something the program writes when it
// is up), or fails the test.
func waitFile(t *testing.T, path string, cmd *exec.Cmd, out string) {
	t.Helper()
	if !isoPoll(20*time.Second, func() bool { _, err := os.Stat(path); return err == nil }) {
		b, _ := os.ReadFile(out)
		t.Fatalf("%s never appeared; helper output %q", path, b)
	}
}

// TestParallelRunsInOneWorkspace: 100 runs started at once in a workspace
// lacking the protected names all succeed, each seeing them present and
// unwritable, and leave the workspace and /tmp as they were.
func TestParallelRunsInOneWorkspace(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		t.Run(u.name, func(t *testing.T) {
			w := freshWorkspace(t, u)
			before := listing(t, w.root)
			// Exit 0 only when every protected name is there and cannot be
			// written into; the private temp dir is printed.
			script := `for n in .git .vtcode .codex .agents; do test -d "$n" || exit 3; if (: > "$n/x") 2>/dev/null; then exit 4; fi; done; echo "$TMPDIR"`
			n := 100
			if testing.Short() {
				n = 20 // the VM guests: emulated, and slower by far
			}
			type res struct {
				code int
				out  string
			}
			results := make([]res, n)
			args := append(isoArgs(t, w, "exact"), "/bin/sh", "-c", script)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
					defer cancel()
					cmd := exec.CommandContext(ctx, binary, args...)
					cmd.Env = append([]string{"LANG=C"}, isoEnv(w)...)
					cmd.Dir = w.root
					if u.cred != nil {
						cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
					}
					b, err := cmd.CombinedOutput()
					results[i] = res{isoExitCode(err), string(b)}
				}(i)
			}
			wg.Wait()
			failed := 0
			for i, r := range results {
				if r.code != 0 {
					failed++
					if failed <= 5 {
						t.Errorf("run %d: exit %d: %q", i, r.code, r.out)
					}
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d parallel runs failed", failed, n)
			}
			if after := listing(t, w.root); !slices.Equal(after, before) {
				t.Errorf("the workspace holds %v after the runs, %v before", after, before)
			}
			for _, r := range results {
				if tmp := strings.TrimSpace(r.out); strings.HasPrefix(tmp, "/") {
					// Exact mode: the shared mount point, empty.
					checkTmpLeftNothing(t, "exact", u, tmp)
				}
			}
		})
	}
}

// TestLaterRunCannotUncoverProtectedNames: run B starts while run A holds
// the placeholders, A ends, and only then B's program tries to create
// .git/hooks/post-commit, .codex/x and .vtcode/config.toml: none of them
// may appear on the host (A's end must not uncover B's masks), and nothing
// is left after B.
func TestLaterRunCannotUncoverProtectedNames(t *testing.T) {
	isoNeedTools(t, "sleep")
	for _, u := range isoAnyUser(t) {
		t.Run(u.name, func(t *testing.T) {
			w := freshWorkspace(t, u)
			before := listing(t, w.root)
			src := filepath.Join(w.root, "src")
			wait := func(name string) string {
				return `: > src/` + name + `-ready; while [ ! -e src/` + name + `-go ]; do sleep 0.02; done; `
			}
			a, aOut := helperCmd(t, w, u, "exact", nil, "/bin/sh", "-c", wait("a"))
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = a.Process.Kill(); _ = a.Wait() }()
			waitFile(t, filepath.Join(src, "a-ready"), a, aOut)
			b, bOut := helperCmd(t, w, u, "exact", nil, "/bin/sh", "-c", wait("b")+
				`mkdir -p .git/hooks && echo pwned > .git/hooks/post-commit; mkdir -p .codex && echo x > .codex/x; mkdir -p .vtcode && echo x > .vtcode/config.toml; exit 0`)
			if err := b.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b.Process.Kill(); _ = b.Wait() }()
			waitFile(t, filepath.Join(src, "b-ready"), b, bOut)
			write(t, filepath.Join(src, "a-go"), "")
			if err := a.Wait(); err != nil {
				o, _ := os.ReadFile(aOut)
				t.Fatalf("run A: %v: %q", err, o)
			}
			write(t, filepath.Join(src, "b-go"), "")
			if err := b.Wait(); err != nil {
				o, _ := os.ReadFile(bOut)
				t.Fatalf("run B: %v: %q", err, o)
			}
			for _, p := range []string{".git/hooks/post-commit", ".codex/x", ".vtcode/config.toml"} {
				if _, err := os.Lstat(filepath.Join(w.root, p)); err == nil {
					o, _ := os.ReadFile(bOut)
					t.Errorf("run B created %s on the host after run A ended (B's output %q)", p, o)
				}
			}
			if after := listing(t, w.root); !slices.Equal(after, before) {
				t.Errorf("the workspace holds %v after the runs, %v before", after, before)
			}
		})
	}
}

// TestKilledHelperLeavesNoDebris: kill -9 of the helper, and SIGKILL of the
// caller's process group (the helper under setsid, leading a group of its
// own), leave the workspace as it was and remove the run's temp dir (in
// exact mode leave the shared mount point empty), for any user, in both
// modes.
func TestKilledHelperLeavesNoDebris(t *testing.T) {
	users := isoAnyUser(t)
	isoNeedTools(t, "setsid", "sleep")
	for _, u := range users {
		for _, kill := range []string{"kill", "killpg"} {
			for _, mode := range fsModes {
				t.Run(u.name+"/"+kill+"/"+mode, func(t *testing.T) {
					w := freshWorkspace(t, u)
					before := listing(t, w.root)
					var via []string
					if kill == "killpg" {
						via = []string{"setsid"}
					}
					ready := filepath.Join(w.root, "src", "tmpdir")
					cmd, out := helperCmd(t, w, u, mode, via, "/bin/sh", "-c", `echo "$TMPDIR" > src/tmpdir.new && mv src/tmpdir.new src/tmpdir && exec sleep 600`)
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					done := make(chan struct{})
					go func() { _ = cmd.Wait(); close(done) }()
					defer func() { _ = cmd.Process.Kill(); <-done }()
					waitFile(t, ready, cmd, out)
					tmp := strings.TrimSpace(readFile(t, ready))
					if err := os.Remove(ready); err != nil {
						t.Fatal(err)
					}
					if mode == "exact" {
						for _, n := range protectedNames {
							if _, err := os.Lstat(filepath.Join(w.root, n)); err != nil {
								t.Fatalf("no placeholder %s while the run runs: %v", n, err)
							}
						}
					}
					if _, err := os.Lstat(tmp); err != nil || !strings.HasPrefix(tmp, "/") {
						t.Fatalf("no temp dir %q while the run runs: %v", tmp, err)
					}
					if kill == "kill" {
						_ = cmd.Process.Signal(syscall.SIGKILL)
					} else {
						pgid, err := syscall.Getpgid(cmd.Process.Pid)
						if err != nil || pgid != cmd.Process.Pid {
							t.Fatalf("the helper does not lead its process group: %d, %v", pgid, err)
						}
						_ = syscall.Kill(-pgid, syscall.SIGKILL)
					}
					<-done
					clean := func() bool {
						if mode == "exact" {
							// The shared mount point stays (empty:
							// checked below).
							return slices.Equal(listing(t, w.root), before)
						}
						_, err := os.Lstat(tmp)
						return os.IsNotExist(err) && slices.Equal(listing(t, w.root), before)
					}
					// The guardian cleans up once the program is gone.
					if !isoPoll(20*time.Second, clean) {
						_, err := os.Lstat(tmp)
						t.Errorf("after the kill the workspace holds %v (%v before), temp dir %s: %v", listing(t, w.root), before, tmp, err)
					}
					if mode == "exact" {
						checkTmpLeftNothing(t, mode, u, tmp)
					}
				})
			}
		}
	}
}

// TestTempDirOfAKilledRunIsGone: what the program of a killed run wrote
// into its private TMPDIR leaves nothing on the host: the data lived in the
// run's own tmpfs (the host directory under it stays empty), and the
// guardian removes the empty directory.
func TestTempDirOfAKilledRunIsGone(t *testing.T) {
	users := isoAnyUser(t)
	isoNeedTools(t, "sleep")
	for _, u := range users {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := freshWorkspace(t, u)
				ready := filepath.Join(w.root, "src", "tmpdir")
				cmd, out := helperCmd(t, w, u, mode, nil, "/bin/sh", "-c", `echo data > "$TMPDIR/left" && echo "$TMPDIR" > src/tmpdir.new && mv src/tmpdir.new src/tmpdir && exec sleep 600`)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { _ = cmd.Wait(); close(done) }()
				defer func() { _ = cmd.Process.Kill(); <-done }()
				waitFile(t, ready, cmd, out)
				tmp := strings.TrimSpace(readFile(t, filepath.Join(w.root, "src", "tmpdir")))
				if _, err := os.Lstat(filepath.Join(tmp, "left")); err == nil {
					t.Errorf("the program's temp file is on the host at %s/left, not in the run's tmpfs", tmp)
				}
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-done
				if mode == "exact" {
					// The shared mount point, which stays: empty.
					checkTmpLeftNothing(t, mode, u, tmp)
				} else if !isoPoll(20*time.Second, func() bool { _, err := os.Lstat(tmp); return errors.Is(err, os.ErrNotExist) }) {
					t.Errorf("the killed run's temp dir %s is still there", tmp)
				}
			})
		}
	}
}

// TestUsersGitMadeDuringARunSurvives: a real .git the user makes while a
// run holds the placeholder (mkdir, then a file in it: the same directory
// on the host) is the user's: it survives the run's end and a kill of the
// helper, and the other placeholders do not.
func TestUsersGitMadeDuringARunSurvives(t *testing.T) {
	isoNeedTools(t, "sleep")
	for _, u := range isoAnyUser(t) {
		for _, end := range []string{"exit", "kill"} {
			t.Run(u.name+"/"+end, func(t *testing.T) {
				w := freshWorkspace(t, u)
				before := listing(t, w.root)
				src := filepath.Join(w.root, "src")
				cmd, out := helperCmd(t, w, u, "exact", nil, "/bin/sh", "-c",
					`: > src/ready; while [ ! -e src/go ]; do sleep 0.02; done`)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { _ = cmd.Wait(); close(done) }()
				defer func() { _ = cmd.Process.Kill(); <-done }()
				waitFile(t, filepath.Join(src, "ready"), cmd, out)
				// The user, outside the sandbox.
				git := filepath.Join(w.root, ".git")
				if err := os.MkdirAll(git, 0o755); err != nil {
					t.Fatal(err)
				}
				head := filepath.Join(git, "HEAD")
				write(t, head, "ref: refs/heads/main\n")
				if u.cred != nil {
					_ = os.Lchown(head, int(u.cred.Uid), int(u.cred.Gid))
				}
				if end == "exit" {
					write(t, filepath.Join(src, "go"), "")
				} else {
					_ = cmd.Process.Signal(syscall.SIGKILL)
				}
				<-done
				want := append(slices.Clone(before), ".git")
				slices.Sort(want)
				if !isoPoll(20*time.Second, func() bool { return slices.Equal(listing(t, w.root), want) }) {
					t.Errorf("the workspace holds %v, want %v", listing(t, w.root), want)
				}
				if got := readFile(t, head); got != "ref: refs/heads/main\n" {
					t.Errorf(".git/HEAD is %q", got)
				}
				// It is the user's from now on: a later run leaves it too.
				r := isoRun(t, w, u, "exact", runOpts{}, "/bin/true")
				if r.code != 0 {
					t.Fatalf("a later run: %v", r)
				}
				if _, err := os.Stat(head); err != nil {
					t.Errorf("a later run removed the user's .git: %v", err)
				}
				if got := listing(t, w.root); !slices.Equal(got, want) {
					t.Errorf("after a later run the workspace holds %v, want %v", got, want)
				}
			})
		}
	}
}

// TestSweepRemovesOrphanedPlaceholders: when the helper, its guardian and
// the init are all killed at once (nothing left to clean up after the run),
// the placeholders the run made stay, and the stale sweep of a later run
// elsewhere (due: its stamp made old) removes them, as the runner's own
// removal would: the user's workspace is as it was.
func TestSweepRemovesOrphanedPlaceholders(t *testing.T) {
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "the sweep's stamps are root's state directory's")
	}
	w := freshWorkspace(t, isoRoot)
	before := listing(t, w.root)
	ready := filepath.Join(w.root, "src", "ready")
	cmd, out := helperCmd(t, w, isoRoot, "exact", nil, "/bin/sh", "-c", `touch src/ready && exec sleep 600`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() { _ = cmd.Process.Kill(); <-done }()
	waitFile(t, ready, cmd, out)
	_ = os.Remove(ready)
	// The helper and the processes it cloned (guardian, init) share its
	// command name: all stopped first, so that none sees the others die,
	// then killed, the helper last. The guardian leads a process group of
	// its own: the helper's death orphans that group, and the kernel then
	// sends a stopped member SIGHUP and SIGCONT, so a guardian still alive
	// would wake and clean up (1 run in 10 did).
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid))
	ours := []int{cmd.Process.Pid}
	for _, c := range childrenOf(strconv.Itoa(cmd.Process.Pid)) {
		if b, _ := os.ReadFile("/proc/" + c + "/comm"); string(b) == string(comm) {
			pid, _ := strconv.Atoi(c)
			ours = append(ours, pid)
		}
	}
	if len(ours) < 3 {
		t.Fatalf("the helper's guardian and init were not found: %v", ours)
	}
	for _, p := range ours {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	for _, p := range slices.Backward(ours) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	<-done
	left := 0
	for _, n := range protectedNames {
		if _, err := os.Lstat(filepath.Join(w.root, n)); err == nil {
			left++
		}
	}
	if left == 0 {
		t.Fatalf("no placeholder was left for the sweep (the guardian survived?): %v", listing(t, w.root))
	}
	// A sweep runs beside its run's program and ends with it: the program
	// lasts until the test has seen the workspace clean (or a minute has
	// passed), however long a busy host makes the sweep take. Another
	// helper's sweep at the same moment makes this one skip, and may
	// end first: then a later run sweeps again.
	other := isoWorkspace(t, isoRoot)
	clean := func() bool { return slices.Equal(listing(t, w.root), before) }
	for i := 0; i < 5 && !clean(); i++ {
		old := time.Now().Add(-2 * time.Hour)
		if err := os.Chtimes("/run/sandbox-executable/swept", old, old); err != nil {
			t.Fatal(err)
		}
		seen := filepath.Join(other.root, fmt.Sprintf("clean.%d", i))
		sweeper, sweeperOut := helperCmd(t, other, isoRoot, "exact", nil,
			"/bin/sh", "-c", `i=0; while [ ! -e "$0" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done`, seen)
		if err := sweeper.Start(); err != nil {
			t.Fatal(err)
		}
		isoPoll(60*time.Second, clean)
		write(t, seen, "")
		if err := sweeper.Wait(); err != nil {
			b, _ := os.ReadFile(sweeperOut)
			t.Fatalf("the sweeping run: %v: %s", err, b)
		}
	}
	if !clean() {
		t.Errorf("after the sweeps the workspace holds %v, %v before", listing(t, w.root), before)
	}
}
