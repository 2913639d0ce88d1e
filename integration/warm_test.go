package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbox-executable/internal/testcap"
)

// warmRun runs the helper over w with policy and argv as run does, but
// returns how many threads the helper had while its program ran (the
// program sleeps first, so that they can be counted): 1 for a run the
// warm path carried out before the Go runtime started, several for one
// Go decided. env is added to the run's environment.
func warmRun(t *testing.T, w *workspace, policy string, env []string, script string) (result, int) {
	t.Helper()
	r, threads, _ := warmRunSaid(t, w, policy, env, script)
	return r, threads
}

// warmRunSaid is warmRun, with what the warm path said.
func warmRunSaid(t *testing.T, w *workspace, policy string, env []string, script string) (result, int, string) {
	t.Helper()
	return warmRunWatched(t, w, policy, env, script, nil)
}

// warmRunWatched is warmRunSaid, calling watch (when not nil) with the
// helper's pid while the program sleeps, after its threads are counted.
func warmRunWatched(t *testing.T, w *workspace, policy string, env []string, script string, watch func(pid int)) (result, int, string) {
	t.Helper()
	args := []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", policy, "--", "/bin/sh", "-c", "sleep 0.4; " + script}
	cmd := exec.Command(binary, args...)
	cmd.Dir = w.root
	cmd.Env = append(append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"}, w.env()...), env...)
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "SANDBOX_EXECUTABLE_WARM=") }) {
		// The warm path says what it did, which a failure shows (the
		// lines are taken out of stderr).
		cmd.Env = append(cmd.Env, "SANDBOX_EXECUTABLE_WARM=debug")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started.Store(cmd.Process.Pid, true)
	// Threads are counted once the program runs (its sleep is there), not
	// after a fixed time: in an emulated guest the helper's own start can
	// outlast any guess, and a Go runtime not started yet has one thread.
	// A helper that ends first (a refused run) ends the wait too.
	if !isoPoll(20*time.Second, func() bool { return descendantNamed(cmd.Process.Pid, "sleep") || exited(cmd.Process.Pid) }) {
		t.Logf("the program's sleep never showed under the helper")
	}
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task")
	if watch != nil {
		watch(cmd.Process.Pid)
	}
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	said := warmSaid(stderr.String())
	errOut, _ := withoutWarmLines(stderr.String())
	if len(tasks) != 1 {
		t.Logf("a run Go decided or supervised (%d threads); the warm path said: %s", len(tasks), said)
	}
	return result{stdout: stdout.String(), stderr: errOut, code: code}, len(tasks), said
}

// warmSaid is what the warm path said on stderr, one line.
func warmSaid(stderr string) string {
	var said []string
	for _, l := range strings.Split(stderr, "\n") {
		if m, ok := strings.CutPrefix(l, warmLine); ok {
			said = append(said, m)
		}
	}
	return strings.Join(said, "; ")
}

// warmRunAgain is warmRun, again (three times more at most) while the run
// was Go's for a reason the test did not cause: the stale sweep was due (a
// run with one due is Go's by design, and a guardian that cleaned up after
// a killed helper asks for one, which earlier tests' guardians may still be
// doing), or what the decision read changed because the first run made it
// (on a fresh host: the state directory, its key, a cgroup parent's
// controllers). Any other reason to be Go's is the test's to see. script
// must bear running more than once.
func warmRunAgain(t *testing.T, w *workspace, policy, script string) (result, int) {
	t.Helper()
	r, threads, _ := warmRunAgainSaid(t, w, policy, script)
	return r, threads
}

// warmRunAgainSaid is warmRunAgain, with what the warm path said.
func warmRunAgainSaid(t *testing.T, w *workspace, policy, script string) (result, int, string) {
	t.Helper()
	return warmRunAgainWatched(t, w, policy, script, nil)
}

// warmRunAgainWatched is warmRunAgainSaid, calling watch as
// warmRunWatched does on each run.
func warmRunAgainWatched(t *testing.T, w *workspace, policy, script string, watch func(pid int)) (result, int, string) {
	t.Helper()
	r, threads, said := warmRunWatched(t, w, policy, nil, script, watch)
	for i := 0; i < 3 && threads != 1 && (strings.Contains(said, "sweep due") || strings.Contains(said, "what the decision read changed")); i++ {
		r, threads, said = warmRunWatched(t, w, policy, nil, script, watch)
	}
	return r, threads, said
}

// warmRunStored is warmRun for a first run, whose decision the test wants
// stored: again (three times more at most, a second apart) while it was not,
// because what the decision read had changed too recently to be checked
// later (a directory the test just made, whose time may even be a whole
// second: a guest's coarse clock keeps ten milliseconds). A run carried out
// from a recipe stored already (a test's second try) does as well. script
// must bear running more than once.
func warmRunStored(t *testing.T, w *workspace, policy, script string) (result, int) {
	t.Helper()
	r, threads, said := warmRunSaid(t, w, policy, nil, script)
	for i := 0; i < 3 && strings.Contains(said, "not stored"); i++ {
		time.Sleep(time.Second)
		r, threads, said = warmRunSaid(t, w, policy, nil, script)
	}
	if threads == 1 && strings.Contains(said, "carrying out the stored recipe") {
		return r, threads
	}
	if !strings.Contains(said, "stored:") {
		t.Fatalf("the first run's decision was not stored; the warm path said: %s", said)
	}
	return r, threads
}

// settle waits out the window in which a change to what a decision reads
// could keep its old time stamps: a decision that reads something changed
// that recently is not stored (fsdeps), and the test wants it stored.
func settle() { time.Sleep(50 * time.Millisecond) }

// TestWarmPathRunsWithoutGo: once an invocation has run, the next run of
// it (with any program) is carried out from the recipe the first stored,
// before the Go runtime starts: the helper is a single thread while its
// program runs (a run Go supervises has five or more), and the program is
// confined exactly as before: it writes the workspace, not outside it, and
// reads no secret. With SANDBOX_EXECUTABLE_WARM=off every run is Go's.
func TestWarmPathRunsWithoutGo(t *testing.T) {
	for _, policy := range []string{"workspace_write", "read_only"} {
		t.Run(policy, func(t *testing.T) {
			w := newWorkspace(t)
			pol := roPolicy
			if policy == "workspace_write" {
				pol = wsPolicy(t, w.root)
			}
			settle()
			script := "cat " + w.home + "/.aws/credentials; echo pwned > " + w.out + "/victim; echo written > " + w.root + "/written; echo done"
			first, firstThreads := warmRunStored(t, w, pol, script)
			second, threads := warmRunAgain(t, w, pol, script)
			off, offThreads := warmRun(t, w, pol, []string{"SANDBOX_EXECUTABLE_WARM=off"}, script)
			if firstThreads < 3 {
				t.Errorf("the first run had %d threads: not decided by Go?", firstThreads)
			}
			if threads != 1 {
				t.Errorf("the second run had %d threads, want 1 (the warm path, no Go runtime)", threads)
			}
			if offThreads < 3 {
				t.Errorf("with the warm path off the run had %d threads", offThreads)
			}
			for name, r := range map[string]result{"first": first, "second": second, "off": off} {
				if strings.Contains(r.stdout, "aws secret") || !strings.Contains(r.stdout, "done") {
					t.Errorf("%s run: %v", name, r)
				}
				if r.stdout != first.stdout || r.stderr != first.stderr || r.code != first.code {
					t.Errorf("%s run differs from the first: %v against %v", name, r, first)
				}
			}
			if got := readFile(t, filepath.Join(w.out, "victim")); got != "original\n" {
				t.Errorf("the file outside was written: %q", got)
			}
			_, err := os.Stat(filepath.Join(w.root, "written"))
			if (policy == "workspace_write") != (err == nil) {
				t.Errorf("%s: writing the workspace: %v", policy, err)
			}
		})
	}
}

// TestWarmPathFollowsChanges: what a stored decision read is checked again
// before it is carried out; when it changed, the run is decided again and
// follows the new state. Each change here is one a stale recipe would get
// wrong: a core.hooksPath added to .git/config (the new hooks directory
// must be unwritable), a policy file (@FILE) edited to read_only (the
// workspace must be unwritable), a writable root replaced by a symbolic
// link (refused), a secret file made where a denied directory had none.
func TestWarmPathFollowsChanges(t *testing.T) {
	t.Run("hooksPath added", func(t *testing.T) {
		w := newWorkspace(t)
		gitRepo(t, w)
		mustMkdir(t, filepath.Join(w.root, "scripts"))
		pol := wsPolicy(t, w.root)
		settle()
		if _, threads := warmRunStored(t, w, pol, "true"); threads < 3 {
			t.Fatalf("the first run was not Go's (%d threads)", threads)
		}
		if _, threads := warmRunAgain(t, w, pol, "true"); threads != 1 {
			t.Fatalf("the second run was not the warm path's (%d threads)", threads)
		}
		gitIn(t, w, w.root, "config", "core.hooksPath", "scripts")
		settle()
		r, _ := warmRun(t, w, pol, nil, "echo pwned > scripts/pre-commit")
		if r.code == 0 {
			t.Errorf("a hook was written into the new core.hooksPath: %v", r)
		}
		if _, err := os.Stat(filepath.Join(w.root, "scripts", "pre-commit")); err == nil {
			t.Errorf("scripts/pre-commit exists")
		}
	})
	t.Run("policy file edited", func(t *testing.T) {
		w, file, pol := policyFileWorkspace(t)
		if r, _ := warmRunStored(t, w, pol, "echo x > w0"); r.code != 0 {
			t.Fatalf("first run: %v", r)
		}
		if r, _ := warmRunAgain(t, w, pol, "echo x > w1"); r.code != 0 {
			t.Fatalf("second run: %v", r)
		}
		write(t, file, roPolicy)
		settle()
		if r, _ := warmRun(t, w, pol, nil, "echo x > after"); r.code == 0 {
			t.Errorf("the workspace is writable under the edited read_only policy: %v", r)
		}
	})
	t.Run("root replaced by a link", func(t *testing.T) {
		w := newWorkspace(t)
		proj := filepath.Join(w.root, "proj")
		mustMkdir(t, proj)
		pol := wsPolicy(t, w.root, proj)
		settle()
		warmRunStored(t, w, pol, "true")
		if err := os.Remove(proj); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(w.out, proj); err != nil {
			t.Fatal(err)
		}
		settle()
		r, _ := warmRun(t, w, pol, nil, "echo pwned > "+w.out+"/victim")
		if r.code != 125 || !strings.Contains(r.stderr, proj) {
			t.Errorf("a writable root turned into a link: %v, want a refusal naming it", r)
		}
		if got := readFile(t, filepath.Join(w.out, "victim")); got != "original\n" {
			t.Errorf("written through the link: %q", got)
		}
	})
	t.Run("secret made", func(t *testing.T) {
		w := newWorkspace(t)
		pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
			"sensitive_paths": []map[string]any{{"path": "~/vault"}}, "exclude_slash_tmp": true, "exclude_tmpdir_env_var": true})
		settle()
		warmRunStored(t, w, pol, "true")
		mustMkdir(t, filepath.Join(w.home, "vault"))
		write(t, filepath.Join(w.home, "vault", "key"), "vault secret\n")
		settle()
		r, _ := warmRun(t, w, pol, nil, "cat ~/vault/key; ls ~/vault; echo done")
		if strings.Contains(r.stdout, "vault secret") || strings.Contains(r.stdout, "key") || !strings.Contains(r.stdout, "done") {
			t.Errorf("the new secret was read: %v", r)
		}
	})
}

// policyFileWorkspace is a workspace whose workspace_write policy is read
// from a file outside it (--sandbox-policy @FILE: pol), which a test may
// edit.
func policyFileWorkspace(t *testing.T) (w *workspace, file, pol string) {
	t.Helper()
	w = newWorkspace(t)
	file = filepath.Join(w.out, "policy.json")
	write(t, file, wsPolicy(t, w.root))
	settle()
	return w, file, "@" + file
}

// TestWarmPathChangeEndsTheEarlyInit: the stored decision is checked
// after the runner has cloned the init (which makes its namespaces
// meanwhile, and nothing else before the runner's first go). When what the
// decision read changed, that init is ended and reaped before Go decides
// again: the run Go then starts has the children a run Go decides from the
// start has, and no more (an init left behind would be one more, a zombie
// or one waiting for a go that never comes). The run is Go's, so the warm
// path's time line is not printed.
func TestWarmPathChangeEndsTheEarlyInit(t *testing.T) {
	w, file, pol := policyFileWorkspace(t)
	if r, _ := warmRunStored(t, w, pol, "true"); r.code != 0 {
		t.Fatalf("first run: %v", r)
	}
	if _, threads := warmRunAgain(t, w, pol, "true"); threads != 1 {
		t.Fatalf("the second run was not the warm path's (%d threads)", threads)
	}
	children := func(n *[]string) func(pid int) {
		return func(pid int) { *n = childrenOf(strconv.Itoa(pid)) }
	}
	var cold []string
	r, _, _ := warmRunWatched(t, w, pol, []string{"SANDBOX_EXECUTABLE_WARM=off"}, "true", children(&cold))
	if r.code != 0 {
		t.Fatalf("a run Go decided: %v", r)
	}
	var changed []string
	var threads int
	var said string
	for try := 1; try <= 3; try++ {
		// Changed again on each try: a sweep that fell due made the run
		// Go's from its start, and its decision, stored, has the change.
		write(t, file, wsPolicy(t, w.root)+strings.Repeat(" ", try))
		settle()
		r, threads, said = warmRunWatched(t, w, pol, nil, "true", children(&changed))
		if !strings.Contains(said, "sweep due") {
			break
		}
	}
	if r.code != 0 || threads < 3 || !strings.Contains(said, "what the decision read changed") || strings.Contains(said, "carrying out") {
		t.Fatalf("after the policy file changed: %v, %d threads, the warm path said: %s", r, threads, said)
	}
	if strings.Contains(said, "time in us") {
		t.Errorf("a run Go decided again printed the warm path's time line: %s", said)
	}
	if len(changed) != len(cold) {
		t.Errorf("the helper had %d children (%v) after a change, %d (%v) in a run Go decided from the start", len(changed), changed, len(cold), cold)
	}
}

// TestWarmPathHandsOver: a run the warm path started hands what needs Go
// over to it, and it is done as in any run: a unix socket the program
// connects to in the workspace (mediated), the wall-clock timeout (124,
// the whole tree ended).
func TestWarmPathHandsOver(t *testing.T) {
	w := newWorkspace(t)
	pol := wsPolicy(t, w.root)
	settle()
	warmRunStored(t, w, pol, "true")
	sock := filepath.Join(w.root, "s.sock")
	r, threads := warmRunAgain(t, w, pol, waitFor+"rm -f "+sock+"; "+probe+" unixserve "+sock+" 1 > "+sock+".up & listening "+sock+".up; "+probe+" unixconnect "+sock+"; wait")
	if threads != 1 {
		t.Errorf("the run had %d threads before its first socket call: not the warm path's", threads)
	}
	if !strings.Contains(r.stdout, "ok") {
		t.Errorf("a socket in the workspace: %v", r)
	}
	limited := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
		"resource_limits": map[string]any{"timeout_secs": 1}, "exclude_slash_tmp": true, "exclude_tmpdir_env_var": true})
	warmRunStored(t, w, limited, "true")
	start := time.Now()
	r, threads = warmRunAgain(t, w, limited, "sleep 30 & sleep 30")
	// 124 says the timeout ended it (the program sleeps 30 s).
	if r.code != 124 {
		t.Errorf("timeout: %v after %s, want 124", r, time.Since(start))
	}
	if threads != 1 {
		t.Errorf("the timed-out run had %d threads before its timeout", threads)
	}
}

// TestWarmPathHandsOverAfterAListingChange: a run the warm path started
// hands over to Go at its first mediated socket call, which may come long
// after the start, when a split directory has changed meanwhile (here a
// file made in HOME, beside the secrets). Go serves from the stored
// service record and decides nothing again: the program, restricted by the
// rules of its start as any run is, goes on and ends as it would have
// (once, it was killed: 125, "deciding again gave another").
func TestWarmPathHandsOverAfterAListingChange(t *testing.T) {
	w := newWorkspace(t)
	pol := wsPolicy(t, w.root)
	trigger := filepath.Join(w.home, "made-during-the-run")
	script := `until [ -e "$HOME/made-during-the-run" ]; do sleep 0.05; done; ` + probe + " unixconnect " + filepath.Join(w.root, "no.sock") + "; echo done"
	settle()
	warmRunStored(t, w, pol, "true")
	for try := 1; ; try++ {
		// The trigger is an entry of HOME, which no decision lists:
		// made and removed, it leaves the stored recipe as it was.
		os.Remove(trigger)
		r, threads, said := warmRunWatched(t, w, pol, nil, script, func(int) {
			if err := os.WriteFile(trigger, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		})
		if threads != 1 && try < 3 {
			continue // Go's from its start (a sweep due, say): not this test's case
		}
		if !strings.Contains(said, "the run needs Go") {
			t.Fatalf("the warm run did not call on Go at its socket call: %s", said)
		}
		if r.code != 0 || !strings.HasSuffix(r.stdout, "done\n") {
			t.Fatalf("handed over after HOME's listing changed: %v", r)
		}
		return
	}
}

// TestWarmPathAfterHomeGainsEntries: a split directory's entries are
// listed by the run at its start, not by the decision, so a HOME that
// gains entries (a file, a directory) or whose entries change type keeps
// its stored recipe: the next run is the warm path's, and reads them all.
// Before, the listing was a dependency of the decision: any new entry in
// HOME made the next run Go's, deciding again.
func TestWarmPathAfterHomeGainsEntries(t *testing.T) {
	w := newWorkspace(t)
	pol := wsPolicy(t, w.root)
	swap, flip := filepath.Join(w.home, "swap"), filepath.Join(w.home, "flip")
	for try := 1; ; try++ {
		// HOME is split around the default secrets it lacks, so its
		// entries are granted one by one.
		for _, p := range []string{swap, flip, filepath.Join(w.home, "new.txt"), filepath.Join(w.home, "newdir")} {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
		}
		mustMkdir(t, swap)
		write(t, filepath.Join(swap, "inner.txt"), "inner\n")
		write(t, flip, "flip file\n")
		settle()
		warmRunStored(t, w, pol, "true")
		r, threads := warmRunAgain(t, w, pol, "cat ~/swap/inner.txt ~/flip")
		if threads != 1 || r.stdout != "inner\nflip file\n" {
			t.Fatalf("before the change: %v (%d threads), want both read on the warm path", r, threads)
		}
		for _, p := range []string{swap, flip} {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
		}
		write(t, swap, "now a file\n")
		mustMkdir(t, flip)
		write(t, filepath.Join(flip, "in.txt"), "in flip\n")
		write(t, filepath.Join(w.home, "new.txt"), "new\n")
		mustMkdir(t, filepath.Join(w.home, "newdir"))
		write(t, filepath.Join(w.home, "newdir", "in.txt"), "in newdir\n")
		settle()
		r, threads, said := warmRunSaid(t, w, pol, nil, "cat ~/swap ~/flip/in.txt ~/new.txt ~/newdir/in.txt")
		if threads != 1 && strings.Contains(said, "sweep due") && try < 3 {
			// A sweep fell due meanwhile (its stamps age while the
			// tests run): that run was Go's, and decided afresh.
			continue
		}
		if threads != 1 || strings.Contains(said, "changed") {
			t.Fatalf("the run after HOME gained entries was not the warm path's with the stored recipe (%d threads): %s", threads, said)
		}
		if r.code != 0 || r.stdout != "now a file\nin flip\nnew\nin newdir\n" {
			t.Errorf("the new and changed entries were not read: %v", r)
		}
		return
	}
}

// TestWarmPathAfterASweep: the run a due sweep makes Go's stamps the sweep
// as soon as its program has started, not in a goroutine that a short run
// may end first, so however short that program, the next run is the warm
// path's again.
func TestWarmPathAfterASweep(t *testing.T) {
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "the stamps are root's state directory's")
	}
	w := newWorkspace(t)
	pol := wsPolicy(t, w.root)
	settle()
	warmRunStored(t, w, pol, "true")
	old := time.Now().Add(-2 * time.Hour)
	for _, stamp := range []string{"swept", "swept-cgroups"} {
		p := filepath.Join("/run/sandbox-executable", stamp)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if _, threads := warmRun(t, w, pol, nil, "true"); threads < 3 {
		t.Errorf("the run with a sweep due had %d threads: not Go's", threads)
	}
	if _, threads := warmRunAgain(t, w, pol, "true"); threads != 1 {
		t.Errorf("the run after the sweep had %d threads: not the warm path's", threads)
	}
}

// TestWarmPathSaysWhereTheTimeWent: with SANDBOX_EXECUTABLE_WARM=debug a
// run the warm path carried out ends with one line giving each of its
// phases in microseconds, in the order they ran, and the total (the
// start-up profile of a warm run); a run Go decided (which the runner may
// carry out too) has no such line.
func TestWarmPathSaysWhereTheTimeWent(t *testing.T) {
	w := newWorkspace(t)
	pol := wsPolicy(t, w.root)
	settle()
	_, _, first := warmRunSaid(t, w, pol, nil, "true")
	if strings.Contains(first, "time in us") {
		t.Errorf("a run Go decided has a time line: %s", first)
	}
	if !strings.Contains(first, "stored:") {
		_, _ = warmRunStored(t, w, pol, "true")
	}
	_, threads, said := warmRunAgainSaid(t, w, pol, "true")
	if threads != 1 {
		t.Fatalf("the second run was not the warm path's (%d threads): %s", threads, said)
	}
	const lead = "time in us: "
	i := strings.Index(said, lead)
	if i < 0 {
		t.Fatalf("no time line; the warm path said: %s", said)
	}
	line := said[i+len(lead):]
	phases, total, ok := strings.Cut(line, "; total ")
	if !ok {
		t.Fatalf("no total in %q", line)
	}
	sum := 0
	var names []string
	for _, p := range strings.Split(phases, ", ") {
		j := strings.LastIndexByte(p, ' ')
		us, err := strconv.Atoi(p[j+1:])
		if j < 0 || err != nil || us < 0 {
			t.Fatalf("phase %q in %q", p, line)
		}
		names = append(names, p[:j])
		sum += us
	}
	want := []string{"key", "lookup", "init", "dependencies", "signals", "placeholders", "cgroups", "guardian", "landlock",
		"start", "program", "cgroups removed", "placeholders removed", "init reaped", "guardian released"}
	if !slices.Equal(names, want) {
		t.Errorf("phases %q, want %q", names, want)
	}
	// Each phase is rounded down on its own: the sum may fall short of the
	// total by less than a microsecond per phase, never exceed it.
	tot, err := strconv.Atoi(strings.TrimSpace(total))
	if err != nil || sum > tot || tot-sum > len(want) {
		t.Errorf("total %q against the phases' sum %d", total, sum)
	}
	_, _, said = warmRunSaid(t, w, pol, []string{"SANDBOX_EXECUTABLE_WARM=off"}, "true")
	if said != "" {
		t.Errorf("with the warm path off it said: %s", said)
	}
}

// TestWarmPathEndsBesideTheInitOnlyWhenAlone: a warm run whose program
// left nothing behind removes its cgroups and placeholders while its init
// tears the namespaces down, and reaps the init after (the debug line's
// "init reaped" phase); a run whose program left a process running does
// not: its init exits first, which kills that process, and only then do the
// placeholders go. Were the placeholders to go with the process still
// there, it could make .git on the host (TestLeftoverCannotPlantAtTheEnd).
func TestWarmPathEndsBesideTheInitOnlyWhenAlone(t *testing.T) {
	w := newWorkspace(t)
	pol := wsPolicy(t, w.root)
	settle()
	_, _ = warmRunStored(t, w, pol, "true")
	r, threads, said := warmRunAgainSaid(t, w, pol, "true")
	if threads != 1 || r.code != 0 {
		t.Fatalf("not a warm run (%d threads, %v): %s", threads, r, said)
	}
	if !strings.Contains(said, ", init reaped ") {
		t.Errorf("a program that left nothing: no early end; the warm path said: %s", said)
	}
	id := tag(t)
	r, threads, said = warmRunAgainSaid(t, w, pol, `/bin/sh -c 'sleep 1000' `+id+` & exit 0`)
	if threads != 1 || r.code != 0 {
		t.Fatalf("not a warm run (%d threads, %v): %s", threads, r, said)
	}
	if !strings.Contains(said, "time in us") || strings.Contains(said, "init reaped") {
		t.Errorf("a program that left a process running: the run ended beside its init; the warm path said: %s", said)
	}
	if left := processesTagged(id); len(left) > 0 {
		t.Errorf("the process left behind outlived the run: %v", left)
	}
}

// TestWarmPathPlaceholdersGoWithTheRun: a warm run's guardian holds a
// reference on each placeholder it made (so that the removal at the end
// only unlinks the name: freeing a directory's block costs some 90 us
// where the filesystem discards at once), yet every name is gone when the
// helper exits, and a moment later nothing holds the removed directories
// (a reference kept for good would keep their inodes, and their blocks,
// for as long as it lives).
func TestWarmPathPlaceholdersGoWithTheRun(t *testing.T) {
	w := newWorkspace(t)
	pol := wsPolicy(t, w.root)
	before := listing(t, w.root)
	settle()
	_, _ = warmRunStored(t, w, pol, "true")
	var held []string
	watch := func(pid int) {
		// The guardian is the helper's child, outside the program's tree.
		held = fdsUnder(strconv.Itoa(pid), w.root)
		for _, c := range childrenOf(strconv.Itoa(pid)) {
			held = append(held, fdsUnder(c, w.root)...)
		}
	}
	_, threads, said := warmRunAgainWatched(t, w, pol, "true", watch)
	if threads != 1 {
		t.Fatalf("the run was not the warm path's (%d threads): %s", threads, said)
	}
	for _, n := range protectedNames {
		if !slices.Contains(held, filepath.Join(w.root, n)) {
			t.Errorf("while the program ran, nothing of the helper's held the placeholder %s (held: %q)", n, held)
		}
	}
	if after := listing(t, w.root); !slices.Equal(after, before) {
		t.Errorf("the workspace holds %v after the run, %v before", after, before)
	}
	var left []string
	gone := isoPoll(5*time.Second, func() bool {
		left = nil
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			left = append(left, fdsUnder(filepath.Base(p), w.root)...)
		}
		return len(left) == 0
	})
	if !gone {
		t.Errorf("5 s after the run, open fds still point into the workspace: %q", left)
	}
}

// descendantNamed says whether a process under pid (its children, theirs,
// and so on) has the command name comm.
func descendantNamed(pid int, comm string) bool {
	queue := []string{strconv.Itoa(pid)}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range childrenOf(p) {
			if name, err := os.ReadFile("/proc/" + c + "/comm"); err == nil && strings.TrimSpace(string(name)) == comm {
				return true
			}
			queue = append(queue, c)
		}
	}
	return false
}

// childrenOf lists the pids of process pid's children (of all its threads).
func childrenOf(pid string) []string {
	var out []string
	kids, _ := filepath.Glob("/proc/" + pid + "/task/*/children")
	for _, k := range kids {
		b, _ := os.ReadFile(k)
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// exited says whether process pid (a child of the test's, not yet waited
// for) has exited: it is a zombie.
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

// fdsUnder lists what the fds of process pid point at under dir (a removed
// directory reads "<path> (deleted)").
func fdsUnder(pid, dir string) []string {
	var out []string
	fds, _ := filepath.Glob("/proc/" + pid + "/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, dir+"/") {
			out = append(out, l)
		}
	}
	return out
}
