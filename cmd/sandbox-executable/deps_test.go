package main

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
	"sandbox-executable/hostfacts"
	"sandbox-executable/internal/testcap"
	"sandbox-executable/runstate"
	"sandbox-executable/spawn"
	"sandbox-executable/supervisor"
)

// The decision recorded: these tests decide runs as run does (config,
// hostfacts.Probe, supervisor.Prepare), take what fsdeps recorded, and
// check it with the C verifier (spawn.CheckDeps): it holds right after,
// and each kind of change to what the decision read makes it fail.

const childEnv = "SE_FSDEPS_CHILD"

// inPrivateTmp runs the calling test again in a child process with a mount
// namespace of its own and a fresh tmpfs on /tmp, and reports false in the
// parent (which has nothing more to do); in the child it reports true. A
// decision lists the directories above a denied path that does not exist
// (Landlock keeps it unreadable should it appear): with the test's HOME in
// the host's /tmp, any file another test makes there would change what
// was recorded. Nothing of the host's is written either way.
func inPrivateTmp(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			t.Fatalf("tmpfs on /tmp: %v", err)
		}
		return true
	}
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root for a mount namespace with its own /tmp")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child: %v", err)
	}
	return false
}

// decision is one run decided with its dependencies recorded.
type decision struct {
	pr     *supervisor.Prepared
	deps   []fsdeps.Dep
	enc    []byte
	taints []string
}

// decide decides a run of args as run does and returns what it recorded.
func decide(t *testing.T, args []string) decision {
	t.Helper()
	fsdeps.Reset()
	o, err := parseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	inv := &invocation{o: o, out: &outputs{log: slog.New(slog.DiscardHandler), reportFD: -1}, startedAt: time.Now()}
	_, _, pr, err := inv.decide()
	if err != nil {
		t.Fatal(err)
	}
	d := decision{pr: pr, deps: fsdeps.Deps(), taints: fsdeps.Tainted()}
	if d.enc, err = fsdeps.Encode(d.deps); err != nil {
		t.Fatal(err)
	}
	return d
}

// holds says whether d's dependencies hold, and which failed.
func (d decision) holds() (bool, string) {
	ok, i, why := spawn.CheckDeps(d.enc)
	if ok {
		return true, ""
	}
	if i >= 0 && i < len(d.deps) {
		return false, d.deps[i].String() + ": " + why.String()
	}
	return false, why.String()
}

const (
	readOnlyPolicy  = `{"type":"read_only","network_access":false,"network_allowlist":[]}`
	workspacePolicy = `{"type":"workspace_write","writable_roots":[],"network_access":false,"network_allowlist":[]}`
	vtcodeSeccomp   = `{"blocked_syscalls":["ptrace","mount","umount","umount2","init_module","finit_module","delete_module","kexec_load","kexec_file_load","bpf","perf_event_open","userfaultfd","process_vm_readv","process_vm_writev","reboot","swapon","swapoff","settimeofday","clock_settime","adjtimex","add_key","request_key","keyctl","ioperm","iopl","iopl","acct","quotactl","unshare","setns","personality"],"allow_namespaces":false,"allow_network_sockets":false,"log_only":false}`
	vtcodeLimits    = `{"max_memory_mb":512,"max_pids":64,"max_disk_mb":1024,"cpu_time_secs":60,"timeout_secs":120}`
)

// vtcodeArgs is VT Code's invocation (contract fixture
// invocation-read_only-pipe.json) with the policy and cwd given.
func vtcodeArgs(cwd, pol string) []string {
	return []string{"--sandbox-policy-cwd", cwd, "--sandbox-policy", pol, "--seccomp-profile", vtcodeSeccomp,
		"--resource-limits", vtcodeLimits, "--", "/bin/bash", "-c", "ls -la"}
}

// world is a test's HOME (reached through a symlink), workspace (a git
// repository) and state directory, in the private /tmp.
type world struct {
	root, home, realHome, otherHome, ws string
}

func newWorld(t *testing.T) world {
	t.Helper()
	root := t.TempDir()
	w := world{root: root, home: root + "/home", realHome: root + "/real-home", otherHome: root + "/other-home", ws: root + "/ws"}
	for _, d := range []string{w.realHome + "/.aws", w.realHome + "/.config", w.otherHome, w.ws + "/.git/hooks", root + "/state"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root+"/state", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(w.realHome, w.home); err != nil {
		t.Fatal(err)
	}
	writeFile(t, w.ws+"/.git/HEAD", "ref: refs/heads/main\n")
	writeFile(t, w.ws+"/.git/config", "[core]\n\trepositoryformatversion = 0\n")
	writeFile(t, w.ws+"/main.go", "package main\n")
	runstate.Base = root + "/state"
	t.Cleanup(func() { runstate.Base = "" })
	for k, v := range map[string]string{"HOME": w.home, "PWD": w.ws, "TMPDIR": root, "PATH": "/usr/bin:/bin"} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
		"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GOCACHE", "GOMODCACHE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Chdir(w.ws)
	return w
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// settle waits until what the test made is older than fsdeps' window for
// racy times (a file changed within it taints the decision).
func settle() { time.Sleep(60 * time.Millisecond) }

// decideSettled lets what the test made settle, then decides a run of
// args. A decision whose only taints are whole-second times is made once
// more when those times are old enough: a guest kernel whose coarse clock
// steps in whole ticks from a whole-second boot time stamps about one file
// in HZ with .000000000, which fsdeps rightly cannot tell from a
// filesystem that keeps only seconds.
func decideSettled(t *testing.T, args []string) decision {
	t.Helper()
	settle()
	d := decide(t, args)
	if wholeSecondOnly(d.taints) {
		t.Logf("a whole-second time, decided again later: %v", d.taints)
		time.Sleep(2100 * time.Millisecond)
		d = decide(t, args)
	}
	return d
}

// wholeSecondOnly reports whether there are taints and every one is of a
// whole-second time.
func wholeSecondOnly(tt []string) bool {
	for _, s := range tt {
		if !strings.Contains(s, "a whole-second time") {
			return false
		}
	}
	return len(tt) > 0
}

// TestRecordedDecisionHoldsUntilWhatItReadChanges decides VT Code's
// read_only and workspace_write runs, checks that the recorded
// dependencies hold right after, and that each change fails them.
func TestRecordedDecisionHoldsUntilWhatItReadChanges(t *testing.T) {
	if !inPrivateTmp(t) {
		return
	}
	cases := []struct {
		name   string
		policy string
		at     string // in the dependency that fails first
		change func(t *testing.T, w world)
	}{
		{"the HOME symlink retargeted", readOnlyPolicy, "/home:", func(t *testing.T, w world) {
			os.Remove(w.home)
			os.Symlink(w.otherHome, w.home)
		}},
		{"a sensitive path created where there was none", readOnlyPolicy, "/real-home/.ssh:", func(t *testing.T, w world) {
			os.Mkdir(w.realHome+"/.ssh", 0o700)
		}},
		{"a denied path removed", readOnlyPolicy, "/real-home/.aws:", func(t *testing.T, w world) {
			os.Remove(w.realHome + "/.aws")
		}},
		{"HOME's mode changed", readOnlyPolicy, "/real-home:", func(t *testing.T, w world) {
			os.Chmod(w.realHome, 0o700)
		}},
		{".git/config rewritten with a core.hooksPath", workspacePolicy, "/.git/config:", func(t *testing.T, w world) {
			writeFile(t, w.ws+"/.git/config", "[core]\n\thooksPath = h\n")
		}},
		{"the hooks directory replaced by a symlink", workspacePolicy, "/.git/hooks:", func(t *testing.T, w world) {
			os.Remove(w.ws + "/.git/hooks")
			os.Symlink(w.otherHome, w.ws+"/.git/hooks")
		}},
		{"a protected name created in the workspace", workspacePolicy, "/ws/.codex:", func(t *testing.T, w world) {
			os.Mkdir(w.ws+"/.codex", 0o755)
		}},
		{"a global git config made", workspacePolicy, "/.gitconfig:", func(t *testing.T, w world) {
			writeFile(t, w.realHome+"/.gitconfig", "[core]\n\thooksPath = /x\n")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			args := vtcodeArgs(w.ws, c.policy)
			decide(t, args) // the first run makes the state directory and its key
			d := decideSettled(t, args)
			if len(d.taints) > 0 {
				t.Fatalf("tainted: %v", d.taints)
			}
			if ok, why := d.holds(); !ok {
				t.Fatalf("does not hold right after the decision: %s", why)
			}
			c.change(t, w)
			ok, why := d.holds()
			if ok {
				t.Fatalf("still holds after: %s", c.name)
			}
			if !strings.Contains(why, c.at) {
				t.Errorf("fails at %s, not at %q", why, c.at)
			}
			// Decided again, the run is not the same: the recipe had to go.
			again := decide(t, args)
			if slices.Equal(again.enc, d.enc) {
				t.Errorf("the same dependencies after the change")
			}
		})
	}
}

// TestRecordedDecisionNarrowsHome: the read_only decision in exact mode
// splits HOME (a denied path that does not exist lies in it) without
// listing it, which the run does: a new entry there changes no decision.
// What it records covers the boot, the mount table and the state
// directory.
func TestRecordedDecisionNarrowsHome(t *testing.T) {
	if !inPrivateTmp(t) {
		return
	}
	w := newWorld(t)
	args := vtcodeArgs(w.ws, readOnlyPolicy)
	decide(t, args)
	d := decideSettled(t, args)
	has := func(k fsdeps.Kind, path string) bool {
		for _, dep := range d.deps {
			if dep.Kind == k && dep.Path == path {
				return true
			}
		}
		return false
	}
	for _, want := range []struct {
		k    fsdeps.Kind
		path string
	}{
		{fsdeps.KindReadlink, w.home},
		{fsdeps.KindLstat, w.realHome + "/.ssh"},
		{fsdeps.KindFileContent, "/proc/sys/kernel/random/boot_id"},
		{fsdeps.KindFileContent, "/proc/self/mountinfo"},
		{fsdeps.KindFileMeta, "/etc/passwd"},
		{fsdeps.KindFileMeta, w.root + "/state/key"},
	} {
		if !has(want.k, want.path) {
			t.Errorf("no %v of %s recorded", want.k, want.path)
		}
	}
	if has(fsdeps.KindReadDir, w.realHome) {
		t.Errorf("HOME's listing recorded")
	}
	writeFile(t, w.realHome+"/notes.txt", "")
	if ok, why := d.holds(); !ok {
		t.Errorf("a new entry in HOME failed the decision: %s", why)
	}
	for _, r := range fsdeps.ProcSelfReads() {
		t.Logf("read unrecorded (key): %s", r)
	}
	t.Logf("%d dependencies, %d bytes", len(d.deps), len(d.enc))
}

// TestPasswdHomeRecorded: the home directory read from a passwd file is
// recorded, and a change to the file fails it.
func TestPasswdHomeRecorded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "passwd")
	writeFile(t, p, "root:x:0:0:root:/root:/bin/bash\nu:x:1000:1000::/home/u:/bin/sh\n")
	settle()
	t.Cleanup(fsdeps.Reset)
	for try := 1; try <= 2; try++ {
		fsdeps.Reset()
		if h, ok := etcPasswdHome(p, 1000); !ok || h != "/home/u" {
			t.Fatal(h, ok)
		}
		if try == 1 && wholeSecondOnly(fsdeps.Tainted()) {
			t.Logf("a whole-second time, read again later: %v", fsdeps.Tainted())
			time.Sleep(2100 * time.Millisecond)
			continue
		}
		break
	}
	enc, err := fsdeps.Encode(fsdeps.Deps())
	if err != nil || len(fsdeps.Tainted()) > 0 {
		t.Fatal(err, fsdeps.Tainted())
	}
	if ok, _, why := spawn.CheckDeps(enc); !ok {
		t.Fatalf("does not hold: %v", why)
	}
	writeFile(t, p, "root:x:0:0:root:/root:/bin/bash\nu:x:1000:1000::/home/v:/bin/sh\n")
	if ok, _, _ := spawn.CheckDeps(enc); ok {
		t.Fatal("holds after the passwd file changed")
	}
}

// TestDecisionDepsOnThisHost measures, with SE_FSDEPS_MEASURE=1, what a
// VT Code read_only decision records in this process's own environment
// (HOME, the state directory looked up read-only as --explain does, the
// working directory as the cwd) and how long the C check takes.
func TestDecisionDepsOnThisHost(t *testing.T) {
	if os.Getenv("SE_FSDEPS_MEASURE") == "" {
		t.Skip("set SE_FSDEPS_MEASURE=1 to measure on this host")
	}
	cwd, _ := os.Getwd()
	fsdeps.Reset()
	o, err := parseArgs(vtcodeArgs(cwd, readOnlyPolicy))
	if err != nil {
		t.Fatal(err)
	}
	inv := &invocation{o: o, out: &outputs{log: slog.New(slog.DiscardHandler), reportFD: -1}, startedAt: time.Now()}
	t0 := time.Now()
	cfg, err := inv.config()
	if err != nil {
		t.Fatal(err)
	}
	facts := hostfacts.Probe(hostfacts.Options{ReadOnly: true, AssumeNamespaces: true, TempDir: cfg.TempDir})
	if _, err := supervisor.Prepare(cfg, facts); err != nil {
		t.Fatal(err)
	}
	decided := time.Since(t0)
	deps := fsdeps.Deps()
	enc, err := fsdeps.Encode(deps)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[fsdeps.Kind]int{}
	for _, d := range deps {
		kinds[d.Kind]++
	}
	t.Logf("decided in %v: %d dependencies, %d bytes; by kind: %v", decided, len(deps), len(enc), kinds)
	t.Logf("tainted: %v", fsdeps.Tainted())
	for _, r := range fsdeps.ProcSelfReads() {
		t.Logf("read unrecorded (key): %s", r)
	}
	if ok, i, why := spawn.CheckDeps(enc); !ok {
		t.Fatalf("does not hold: %s: %v", deps[i].String(), why)
	}
	const n = 2000
	median := func(enc []byte) (time.Duration, time.Duration, time.Duration) {
		times := make([]time.Duration, n)
		for i := range times {
			t0 := time.Now()
			spawn.CheckDeps(enc)
			times[i] = time.Since(t0)
		}
		slices.Sort(times)
		return times[n/2], times[n*9/10], times[0]
	}
	med, p90, least := median(enc)
	t.Logf("C check: median %v, p90 %v, min %v over %d", med, p90, least, n)
	for k := range kinds {
		var some []fsdeps.Dep
		for _, d := range deps {
			if d.Kind == k {
				some = append(some, d)
			}
		}
		b, _ := fsdeps.Encode(some)
		med, _, _ := median(b)
		t.Logf("  %d of kind %v: median %v", len(some), k, med)
	}
	if testing.Verbose() {
		for _, d := range deps {
			t.Logf("  %s", d.String())
		}
	}
}

// TestLaterDecisionRecordsAlike: a decision made after another in the same
// process, as the resident decider makes them (fsdeps.Reset between),
// records everything the process's first decision recorded: no answer kept
// in memory from the first (a cache outliving its record) leaves a read
// out of the second's dependencies, which would then not fail when that
// file changes. Run in a child process of its own, so that the first
// decision is its first.
func TestLaterDecisionRecordsAlike(t *testing.T) {
	if !inPrivateTmp(t) {
		return
	}
	w := newWorld(t)
	for _, pol := range []string{readOnlyPolicy, workspacePolicy} {
		args := vtcodeArgs(w.ws, pol)
		first := decideSettled(t, args)
		// Settled too: the first may have made what it reads (the
		// key), and a file that new is a taint, not a record.
		second := decideSettled(t, args)
		calls := func(d decision) map[string]bool {
			m := map[string]bool{}
			for _, dep := range d.deps {
				// The call, not its answer: the first decision
				// may make what the later one reads (the key).
				m[dep.Kind.String()+" "+dep.Path] = true
			}
			return m
		}
		a, b := calls(first), calls(second)
		for c := range a {
			if !b[c] {
				t.Errorf("%s: the first decision recorded %s, the later one did not", pol[:20], c)
			}
		}
		for c := range b {
			if !a[c] {
				t.Errorf("%s: the later decision recorded %s, the first did not", pol[:20], c)
			}
		}
		if len(a) == 0 {
			t.Fatal("nothing recorded")
		}
	}
}
