package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A user's state directory cannot be taken from them (issue 26, item 6):
// another local user who makes /tmp/sandbox-executable-UID before the
// user's first run (after a reboot) used to stop every sandboxed command
// of the user (exit 125) until root removed it. Now the state goes where
// only the user can make it, the home directory /etc/passwd names
// (~/.local/state/sandbox-executable), it is denied to every sandbox there
// too, the warm path finds it, and doctor says so.

// delegatedCgroup makes a cgroup v2 group of the test's own that uid may
// manage (what systemd's Delegate=yes gives a user), for the warm path's
// runner, which makes the run's group there; removed after the test.
func delegatedCgroup(t *testing.T, uid int) string {
	t.Helper()
	root := "/sys/fs/cgroup"
	if cgroupLayout(t) == "hybrid" {
		root = "/sys/fs/cgroup/unified"
	} else if cgroupLayout(t) != "unified" {
		t.Skip("no cgroup v2 to delegate")
	}
	dir := filepath.Join(root, "se-delegated-"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(uid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A run's guardian may still be leaving it.
		isoPoll(10*time.Second, func() bool {
			subs, _ := os.ReadDir(dir)
			for _, s := range subs {
				if s.IsDir() {
					_ = os.Remove(filepath.Join(dir, s.Name()))
				}
			}
			err := os.Remove(dir)
			return err == nil || os.IsNotExist(err)
		})
	})
	_ = filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, uid) })
	return dir
}

// TestStateTakenByAnotherUser: with the user's /tmp place made first by
// another user, the user's runs still run, in both filesystem modes, with
// their state in the home directory; a sandbox whose writable roots hold
// that home can neither read nor write it; the other user's directory is
// left as it was; doctor names the move.
func TestStateTakenByAnotherUser(t *testing.T) {
	isoNeedRoot(t)
	isoNeedTools(t, "unshare", "nsenter", "mount", "setpriv", "sh", "sleep")
	victim := 63000 + os.Getpid()%1000*2
	squatter := victim + 1
	u := isoUser{name: "victim", cred: &syscall.Credential{Uid: uint32(victim), Gid: uint32(victim)}}
	place := "/tmp/sandbox-executable-" + strconv.Itoa(victim)
	t.Cleanup(func() {
		os.RemoveAll(place)
		os.Remove("/tmp/sandbox-executable-tmp-uid" + strconv.Itoa(victim)) // the runs' shared temp mount point
	})
	os.RemoveAll(place)
	// The other user, first.
	if err := os.Mkdir(place, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(place, squatter, squatter); err != nil {
		t.Fatal(err)
	}
	w := isoWorkspace(t, u)
	state := filepath.Join(w.home, ".local", "state", "sandbox-executable")
	// The user, as /etc/passwd knows them (in the runs' mount namespace).
	sys, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	passwd := filepath.Join(w.out, "passwd")
	write(t, passwd, string(sys)+fmt.Sprintf("se-victim:x:%d:%d::%s:/bin/sh\n", victim, victim, w.home))
	cg := delegatedCgroup(t, victim)
	// One mount namespace for every run (a recipe's key names the mount
	// namespace), held by a process of the test's.
	holder := exec.Command("unshare", "-m", "--propagation", "private", "/bin/sh", "-c", `mount --bind "$0" /etc/passwd && echo ready && exec sleep 600`, passwd)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the mount namespace with the user's /etc/passwd: %q", line)
	}
	via := []string{"nsenter", "-t", strconv.Itoa(holder.Process.Pid), "-m", "/bin/sh", "-c",
		`echo $$ > "$0/cgroup.procs" && exec setpriv --reuid=` + strconv.Itoa(victim) + ` --regid=` + strconv.Itoa(victim) + ` --clear-groups "$@"`, cg}
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			// A first run makes what the next ones' decisions read (the
			// state directory, the cgroup parent): the warm mode's runs
			// then find a recipe that still holds.
			// Landlock-only mode's runs have a private temp dir of their
			// own, so they are Go's throughout: nothing to prime.
			run(t, runOpts{env: isoEnv(w), dir: w.root, via: via, unprimed: true}, append(isoArgs(t, w, mode), "/bin/true")...)
			r := run(t, runOpts{env: isoEnv(w), dir: w.root, via: via, unprimed: mode != "exact"}, append(isoArgs(t, w, mode), probe, "write", filepath.Join(w.root, "src", "x"))...)
			if r.code != 0 || probeResult(r) != "ok" {
				t.Fatalf("a run of the user whose /tmp place another user took: %v", r)
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(state, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Uid != uint32(victim) || st.Mode&0o777 != 0o700 {
				t.Errorf("state directory %s: %+v %v", state, st, err)
			}
			if err := syscall.Lstat(filepath.Join(state, "key"), &st); err != nil {
				t.Errorf("no key in %s: %v", state, err)
			}
			// The other user's directory: as it was.
			if err := syscall.Lstat(place, &st); err != nil || st.Uid != uint32(squatter) {
				t.Errorf("%s: %+v %v", place, st, err)
			}
			if ents, err := os.ReadDir(place); err != nil || len(ents) != 0 {
				t.Errorf("%s holds %v (%v): a run wrote into another user's directory", place, ents, err)
			}
			// A sandbox whose roots hold the home directory cannot get at
			// the state there.
			script := ""
			for _, d := range []string{state, filepath.Join(state, "bpf"), filepath.Join(state, "recipes")} {
				script += fmt.Sprintf("%s tmpfile %s; %s create %s/planted; ", probe, d, probe, d)
			}
			script += fmt.Sprintf("%s read %s/key; %s opendir %s; %s rename %s %s.moved", probe, state, probe, state, probe, state, state)
			// Unprimed: the placeholders a run makes in the home
			// directory (a root without .git) change what the next
			// decision reads, so no recipe of this one ever holds.
			pol := wsPolicy(t, w.root, w.home)
			r = run(t, runOpts{env: isoEnv(w), dir: w.root, via: via, unprimed: true},
				append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol}, append(fsOpts(t, mode), "--", "/bin/sh", "-c", script)...)...)
			for _, l := range isoLines(r.stdout) {
				if strings.HasPrefix(l, "ok") {
					t.Errorf("a sandbox with the home directory writable got at the state directory: %q (%v)", r.stdout, r)
					break
				}
			}
			if len(isoLines(r.stdout)) != 9 {
				t.Errorf("the probes did not all run: %v", r)
			}
		})
	}
	// The warm path finds the state there: a run of the same invocation
	// is carried out from the recipe Go stored, once what the decision read
	// stays put (the first runs make the state directory and a cgroup
	// parent; a busy /tmp, whose listing a decision reads, keeps changing).
	// The C lookup's finding it is asserted by spawn's
	// TestRecipeLookupLocations; here it is logged.
	args := append(isoArgs(t, w, "exact"), "/bin/true")
	hit := false
	var last result
	for i := 0; i < 10 && !hit; i++ {
		last = run(t, runOpts{env: isoEnv(w, "SANDBOX_EXECUTABLE_WARM=debug"), dir: w.root, via: via, unprimed: true}, args...)
		if last.code != 0 {
			t.Fatalf("run %d of the warm invocation: %v", i, last)
		}
		hit = strings.Contains(last.stderr, "carrying out the stored recipe")
	}
	if !hit {
		t.Logf("the warm path never carried out the recipe stored in %s: %v", state, last)
	}
	// doctor says where the state is, and why.
	d := run(t, runOpts{env: isoEnv(w), dir: w.root, via: via}, "doctor", "--json")
	var rep struct {
		Checks []struct{ ID, Status, Detail, Fix string } `json:"checks"`
	}
	if err := json.Unmarshal([]byte(d.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v (%v)", err, d)
	}
	found := false
	for _, c := range rep.Checks {
		if c.ID == "state" {
			found = true
			if c.Status != "degraded" || !strings.Contains(c.Detail, state) || !strings.Contains(c.Detail, place+" is another user's (uid "+strconv.Itoa(squatter)+")") || c.Fix == "" {
				t.Errorf("doctor's state item: %+v", c)
			}
		}
	}
	if !found {
		t.Errorf("doctor has no state item: %s", d.stdout)
	}
}
