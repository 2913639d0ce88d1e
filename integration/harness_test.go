// Package integration runs the built sandbox-executable on the real kernel
// and watches real operations succeed or fail inside it.
//
// The binary comes from $SANDBOX_EXECUTABLE (make integration sets it) or is
// built here; the probe program (probes/probe.c) from $SANDBOX_PROBE or is
// compiled here with gcc -static.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sandbox-executable/integration/dockerlike"
	"sandbox-executable/internal/testcap"
)

var (
	binary string // sandbox-executable
	probe  string // the static probe

	// started holds the pid of every helper this process ran, so that a
	// cgroup left behind can be told from other processes' (their names
	// carry the supervisor's pid).
	started sync.Map
)

func TestMain(m *testing.M) {
	// Run as the container launcher (containers_test.go), it never returns.
	dockerlike.Main()
	catchIgnoredInterrupts()
	code, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration setup:", err)
		os.Exit(2)
	}
	if code >= 0 {
		os.Exit(code)
	}
	if deciderMode {
		stop, err := startSuiteDecider()
		if err != nil {
			fmt.Fprintln(os.Stderr, "integration setup: decider:", err)
			os.Exit(2)
		}
		code = m.Run()
		stop()
		c := &deciderCount
		fmt.Printf("decider: %d of %d runs that asked were carried out from the recipe it stored for them; %d had no answer in time; %d were answered without a decision and no reason\n",
			c.hits.Load(), c.asked.Load(), c.late.Load(), c.unexplained.Load())
		if code == 0 && (c.asked.Load() > 0 && c.hits.Load() == 0 || c.unexplained.Load() > 0) {
			code = 1
		}
	} else {
		code = m.Run()
	}
	os.RemoveAll(toolDir)
	if code == 0 && testBase != "" {
		os.RemoveAll(testBase)
	}
	if warmMode {
		hits, runs := warmHits.Load(), warmRuns.Load()
		fmt.Printf("warm path: %d of %d runs that had a stored recipe to find were carried out from it\n", hits, runs)
		// The mode is worth running only if it exercises the warm path:
		// most runs must be its (2320 of 2688 on the host it was made on;
		// the rest decide what cannot be stored, or change what they read).
		if code == 0 && runs > 0 && hits*2 < runs {
			fmt.Println("warm path: fewer than half the runs were carried out by it")
			code = 1
		}
	}
	os.Exit(code)
}

// warmMode (SE_IT_WARM=1, make integration-warm) runs every helper
// invocation with a "--" once more first, with the program replaced by
// /bin/true: the program's arguments are not part of an invocation's key,
// so the test's own run finds the recipe that run stored and is carried
// out by the warm path, before the Go runtime starts, wherever what its
// decision read still holds. Both say what the warm path did on stderr
// (SANDBOX_EXECUTABLE_WARM=debug); run takes those lines out before a test
// sees stderr, and counts them.
var (
	warmMode           = os.Getenv("SE_IT_WARM") == "1"
	warmHits, warmRuns atomic.Int64
)

// deciderMode (SE_IT_DECIDER=1, make integration-decider) runs every
// helper invocation of this process's own user and credentials (not one
// with runOpts.cred or .via) with a resident decider to ask
// (SANDBOX_EXECUTABLE_DECIDER, a decider this process starts): each test's
// own runs are then carried out from the recipe the decider stored for
// them wherever it may decide them, and must behave as runs Go decided in
// the run's own process. Every run it answers without deciding must say
// why, unless its own decision was not stored either.
var (
	deciderMode  = os.Getenv("SE_IT_DECIDER") == "1"
	deciderSock  string
	deciderCount struct {
		asked, hits, late atomic.Int64
		// unexplained are the runs the decider answered "stored
		// nothing" without a reason, and which then stored their own.
		unexplained atomic.Int64
	}
)

// startSuiteDecider starts the decider of deciderMode; the func it returns
// stops it.
func startSuiteDecider() (stop func(), err error) {
	deciderSock = filepath.Join(toolDir, "decider.sock")
	cmd := exec.Command(realBinary, "decider", deciderSock)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(deciderSock); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}, nil
}

const warmLine = "sandbox-executable: warm path: "

// countDecider counts what the warm path said of a run that asked the
// decider of deciderMode (deciderCount), and logs a run answered without a
// decision or a reason that then stored its own entry.
func countDecider(t *testing.T, stderr string) {
	said := warmSaid(stderr)
	if !strings.Contains(said, "no stored recipe") {
		return
	}
	c := &deciderCount
	c.asked.Add(1)
	switch {
	case strings.Contains(said, "the decider stored the recipe") && strings.Contains(said, "carrying out the stored recipe"):
		c.hits.Add(1)
	case strings.Contains(said, "no answer from the decider"):
		c.late.Add(1)
	case strings.Contains(said, "the decider stored nothing") && !strings.Contains(said, "the decider decided nothing") &&
		strings.Contains(said, "; stored: "):
		c.unexplained.Add(1)
		t.Logf("decider mode: answered without a decision or a reason, and the run stored its own: %s", said)
	}
}

// withoutWarmLines removes the warm path's own lines from stderr and says
// whether the run was carried out from a stored recipe.
func withoutWarmLines(stderr string) (string, bool) {
	if !strings.Contains(stderr, warmLine) {
		return stderr, false
	}
	var keep []string
	hit := false
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if strings.HasPrefix(l, warmLine) {
			hit = hit || strings.Contains(l, "carrying out the stored recipe")
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, ""), hit
}

func setup() (int, error) {
	dir, err := os.MkdirTemp("", "se-integration-")
	if err != nil {
		return 0, err
	}
	toolDir = dir
	// Tools built here are removed when the process exits normally.
	_, file, _, _ := runtime.Caller(0)
	here := filepath.Dir(file)
	binary = os.Getenv("SANDBOX_EXECUTABLE")
	if binary == "" {
		binary = filepath.Join(dir, "sandbox-executable")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/sandbox-executable")
		cmd.Dir = filepath.Dir(here)
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	probe = os.Getenv("SANDBOX_PROBE")
	if probe == "" {
		probe = filepath.Join(dir, "probe")
		cmd := exec.Command("gcc", "-static", "-O2", "-o", probe, filepath.Join(here, "probes", "probe.c"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("gcc probe: %v\n%s", err, out)
		}
	}
	// The tests also run them as an unprivileged user, who may not reach
	// the checkout: use copies in a world-readable directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return 0, err
	}
	for _, p := range []*string{&binary, &probe} {
		if filepath.Dir(*p) == dir {
			continue
		}
		b, err := os.ReadFile(*p)
		if err != nil {
			return 0, err
		}
		c := filepath.Join(dir, filepath.Base(*p))
		if err := os.WriteFile(c, b, 0o755); err != nil {
			return 0, err
		}
		*p = c
	}
	if err := degradedWithoutLandlock(dir); err != nil {
		return 0, err
	}
	// The tests' workspaces and homes (t.TempDir) live in a directory of
	// this run's own, outside /tmp. A decision depends on the listing of
	// every directory above a denied path that does not exist yet (a
	// test's HOME: its ~/.ssh and the like), and /tmp's listing changes
	// whenever anything on the machine makes a file there: every stored
	// recipe would be stale at once on a busy host.
	base, err := os.MkdirTemp("/var/tmp", "s") // short: unix socket paths in it must fit sun_path
	if err != nil {
		return 0, err
	}
	if err := os.Chmod(base, 0o755); err != nil {
		return 0, err
	}
	testBase = base
	os.Setenv("TMPDIR", base)
	return -1, nil
}

// testBase is the directory of the tests' temp dirs (setup), removed
// when they pass; toolDir holds the copies of the binary and the probe.
var testBase, toolDir string

// result is one run of the helper.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// runOpts tune a run.
type runOpts struct {
	stdin   io.Reader
	env     []string // added to a minimal environment
	dir     string
	extra   []*os.File
	timeout time.Duration
	cred    *syscall.Credential
	// via runs the helper through a launcher: via[0] via[1:]... HELPER ARGS.
	via []string
	// bin is the helper to run instead of binary (realBinary: without the
	// wrapper a kernel without Landlock gets).
	bin string
	// unprimed: the warm mode runs this one as it is (its point is what
	// Go's own decision finds, which a priming run would change).
	unprimed bool
	// whileRunning is called with the helper's pid once it started; the
	// helper is reaped only after the func it returns has returned.
	whileRunning func(pid int) (done func())
}

// run runs the helper with args and waits for it.
func run(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	if warmMode && !o.unprimed {
		if i := slices.Index(args, "--"); i >= 0 && i+1 < len(args) {
			o.env = append(slices.Clip(o.env), "SANDBOX_EXECUTABLE_WARM=debug")
			prime := o
			prime.stdin, prime.extra, prime.whileRunning = nil, nil, nil
			runOnce(t, prime, append(slices.Clip(args[:i+1]), "/bin/true")...)
			r := runOnce(t, o, args...)
			warmRuns.Add(1)
			var hit bool
			if r.stderr, hit = withoutWarmLines(r.stderr); hit {
				warmHits.Add(1)
			}
			return r
		}
	}
	return runOnce(t, o, args...)
}

// async runs f (a run of the helper) in a goroutine of its own and delivers
// its result. A run that fails the test fatally (the helper did not finish
// in time) ends that goroutine instead of returning: the result is then
// exit -1, so that the test waiting for it fails rather than hangs.
func async(f func() result) <-chan result {
	ch := make(chan result, 1)
	go func() {
		r := result{code: -1, stderr: "the run failed the test (its log says why)"}
		defer func() { ch <- r }()
		r = f()
	}()
	return ch
}

// runLimit is how long one run of the helper may take unless the test says.
// An emulated guest on a busy host has taken a heavy run to within seconds
// of a minute; there the guest's own watchdog, which follows progress,
// ends a run that hangs, so the limit is only a backstop.
func runLimit() time.Duration {
	if os.Getenv("SE_VM_GUEST") == "1" {
		return 5 * time.Minute
	}
	return time.Minute
}

// runOnce runs the helper with args once and waits for it.
func runOnce(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	timeout := o.timeout
	if timeout == 0 {
		timeout = runLimit()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	helper := binary
	if o.bin != "" {
		helper = o.bin
	}
	cmd := exec.CommandContext(ctx, helper, args...)
	if len(o.via) > 0 {
		cmd = exec.CommandContext(ctx, o.via[0], append(append(o.via[1:], helper), args...)...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = o.stdin
	cmd.Dir = o.dir
	cmd.ExtraFiles = o.extra
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + os.Getenv("HOME"), "LANG=C"}, o.env...)
	asked := deciderMode && o.cred == nil && len(o.via) == 0 && !slices.ContainsFunc(o.env, func(kv string) bool {
		return strings.HasPrefix(kv, "SANDBOX_EXECUTABLE_DECIDER=") || strings.HasPrefix(kv, "SANDBOX_EXECUTABLE_WARM=")
	})
	if asked {
		cmd.Env = append(cmd.Env, "SANDBOX_EXECUTABLE_DECIDER="+deciderSock, "SANDBOX_EXECUTABLE_WARM=debug")
	}
	// Long enough for a starved reader in a loaded TCG guest (100 helpers
	// at once took a pipe's EOF past 5 s there); a copy of the pipes held
	// on purpose outlives any delay, and is then listed (see below).
	cmd.WaitDelay = 20 * time.Second
	if o.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.cred}
	}
	err := cmd.Start()
	if err == nil {
		started.Store(cmd.Process.Pid, true)
		if o.whileRunning != nil {
			o.whileRunning(cmd.Process.Pid)()
		}
		err = cmd.Wait()
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			if errors.Is(err, exec.ErrWaitDelay) {
				// The helper exited but something still holds its
				// stdout or stderr: list every process and its fds.
				ents, _ := os.ReadDir("/proc")
				for _, e := range ents {
					if _, err := strconv.Atoi(e.Name()); err != nil {
						continue
					}
					cl, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
					st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
					fds, _ := os.ReadDir("/proc/" + e.Name() + "/fd")
					var fl []string
					for _, f := range fds {
						l, _ := os.Readlink("/proc/" + e.Name() + "/fd/" + f.Name())
						fl = append(fl, f.Name()+"="+l)
					}
					if f := strings.Fields(string(st)); len(f) >= 5 { // gone meanwhile otherwise
						t.Logf("process %s %q %s fds %v", e.Name(), strings.ReplaceAll(string(cl), "\x00", " "), f[:5], fl)
					}
				}
			}
			t.Fatalf("running %v: %v", args, err)
		}
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("helper did not finish within %s: %v", timeout, args)
	}
	errOut := stderr.String()
	if asked {
		countDecider(t, errOut)
		errOut, _ = withoutWarmLines(errOut)
	}
	return result{stdout: stdout.String(), stderr: withoutNoLandlockNotice(errOut), code: code}
}

// workspace is a writable root with a fake HOME beside it holding secrets.
type workspace struct {
	root string // the writable root
	home string // HOME for the run, with .ssh/id_rsa, .aws/credentials, .netrc
	out  string // a directory outside every root
}

func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	base := t.TempDir()
	// Let an unprivileged user reach it (the nobody tests): the test's
	// temp dir and its parent are private by default.
	_ = os.Chmod(base, 0o755)
	_ = os.Chmod(filepath.Dir(base), 0o755)
	w := &workspace{root: filepath.Join(base, "ws"), home: filepath.Join(base, "home"), out: filepath.Join(base, "outside")}
	for _, d := range []string{w.root, w.out, filepath.Join(w.root, "src"), filepath.Join(w.home, ".ssh"), filepath.Join(w.home, ".aws"), filepath.Join(w.home, "docs")} {
		mustMkdir(t, d)
	}
	write(t, filepath.Join(w.home, ".ssh", "id_rsa"), "PRIVATE KEY\n")
	write(t, filepath.Join(w.home, ".aws", "credentials"), "aws secret\n")
	write(t, filepath.Join(w.home, ".netrc"), "machine x password y\n")
	write(t, filepath.Join(w.home, "docs", "notes.txt"), "readable notes\n")
	write(t, filepath.Join(w.root, "src", "main.c"), "int main(void){return 0;}\n")
	write(t, filepath.Join(w.out, "victim"), "original\n")
	return w
}

// env is the environment of a run over w.
func (w *workspace) env() []string { return []string{"HOME=" + w.home} }

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// policyJSON renders a policy value with Go's encoder.
func policyJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wsPolicy is a workspace_write policy over roots, no network, the default
// sensitive paths and limits unless sensitive or limits are given.
func wsPolicy(t *testing.T, roots ...string) string {
	t.Helper()
	rs := make([]map[string]string, len(roots))
	for i, r := range roots {
		rs[i] = map[string]string{"root": r}
	}
	return policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": rs, "exclude_slash_tmp": true, "exclude_tmpdir_env_var": true})
}

const roPolicy = `{"type":"read_only","network_access":false,"network_allowlist":[]}`

// sandbox runs PROGRAM ARGS under policy with the workspace's HOME and cwd
// set to the root; extra helper options go before "--".
func (w *workspace) sandbox(t *testing.T, policy string, helperOpts []string, argv ...string) result {
	t.Helper()
	args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", policy}, helperOpts...)
	args = append(append(args, "--"), argv...)
	return run(t, runOpts{env: w.env(), dir: w.root}, args...)
}

// probeResult is the probe's verdict: "ok" or an errno name.
func probeResult(r result) string {
	return strings.Fields(r.stdout + " ?")[0]
}

// fsModes are the filesystem modes every filesystem test runs in.
var fsModes = []string{"exact", "landlock"}

var (
	abiOnce sync.Once
	abi     int
)

// landlockABI is the running kernel's Landlock ABI, as the helper reports it.
func landlockABI(t *testing.T) int {
	t.Helper()
	abiOnce.Do(func() {
		r := run(t, runOpts{}, "--explain", "--sandbox-policy", roPolicy)
		var out struct {
			Enforcement struct {
				Landlock struct{ ABI int } `json:"landlock"`
			} `json:"enforcement"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("explain: %v (%v)", err, r)
		}
		abi = out.Enforcement.Landlock.ABI
	})
	return abi
}

// truncateStopped reports whether truncate(2) outside the roots is stopped
// in mode: by the read-only view in exact mode, by Landlock from ABI 3 on.
func truncateStopped(t *testing.T, mode string) bool {
	return mode == "exact" || landlockABI(t) >= 3
}

// fsOpts are the helper options for a filesystem mode. Landlock-only mode
// on a kernel whose Landlock cannot stop truncate(2) (ABI < 3) is refused
// unless degradation is allowed: that refusal is checked here, once, and
// the tests then run with --allow-degraded, expecting what it reports.
func fsOpts(t *testing.T, mode string) []string {
	t.Helper()
	opts := []string{"--fs-mode", mode}
	if mode == "landlock" && !kernelHasLandlock() {
		testcap.Skipf(t, testcap.Landlock, "Landlock-only mode needs Landlock: this kernel has none")
	}
	if truncateStopped(t, mode) {
		return opts
	}
	r := run(t, runOpts{}, append(opts, "--sandbox-policy", roPolicy, "--", "/bin/true")...)
	if r.code != 125 || !strings.Contains(r.stderr, "truncate") {
		t.Fatalf("Landlock ABI %d without truncate: helper did not refuse: %v", landlockABI(t), r)
	}
	return append(opts, "--allow-degraded")
}

// catchIgnoredInterrupts catches SIGINT and SIGQUIT when this process was
// started with them ignored, as a shell starts a background job (the VM
// guest's payload is one): a caught signal is reset to the default by an
// exec, so the helpers the tests run, and their programs, start as from an
// interactive shell instead of with Ctrl-C and Ctrl-\ ignored.
func catchIgnoredInterrupts() {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		hex, ok := strings.CutPrefix(line, "SigIgn:")
		if !ok {
			continue
		}
		ign, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return
		}
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT} {
			if ign&(1<<(uint(sig)-1)) != 0 {
				signal.Notify(make(chan os.Signal, 1), sig)
			}
		}
	}
}
