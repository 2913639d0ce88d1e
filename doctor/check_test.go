package doctor

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/hostfacts"
	"sandbox-executable/internal/testcap"
)

// helperEnv selects the test binary's helper mode: print Check's report as
// JSON and exit.
const helperEnv = "DOCTOR_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "check" {
		if err := json.NewEncoder(os.Stdout).Encode(check()); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// check is what the doctor subcommand prints: this host's facts, rendered.
func check() Report {
	// The trials' answers are asserted, never their time: no bound a
	// loaded machine could pass (the test's own timeout still holds).
	o := ProbeOptions()
	o.TrialTimeout = time.Hour
	return Render(hostfacts.Probe(o), Options{Words: cliWords})
}

// kernelABI asks the kernel directly, as an oracle for the report.
func kernelABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// fsMagic is the filesystem type of p, 0 when it cannot be read.
func fsMagic(p string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil {
		return 0
	}
	return int64(st.Type)
}

// cgroupModeByStatfs tells the layout from filesystem magic numbers, as an
// oracle independent of mountinfo parsing.
func cgroupModeByStatfs() string {
	const cg1, cg2 = unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC
	if fsMagic("/sys/fs/cgroup") == cg2 {
		return "unified"
	}
	v1 := fsMagic("/sys/fs/cgroup/memory") == cg1 || fsMagic("/sys/fs/cgroup/pids") == cg1
	switch {
	case v1 && fsMagic("/sys/fs/cgroup/unified") == cg2:
		return "hybrid"
	case v1:
		return "legacy"
	}
	return ""
}

func mustItem(t *testing.T, r Report, id string) Item {
	t.Helper()
	it, ok := r.Item(id)
	if !ok {
		t.Fatalf("no %s item in %+v", id, r.Checks)
	}
	return it
}

// checkConsistent asserts what holds for any host and any user.
func checkConsistent(t *testing.T, r Report) {
	t.Helper()
	ids := make([]string, len(r.Checks))
	for i, it := range r.Checks {
		ids[i] = it.ID
		if it.Status != StatusOK && it.Status != StatusDegraded && it.Status != StatusMissing {
			t.Errorf("%s: status %q", it.ID, it.Status)
		}
		if it.Status != StatusOK && it.Strict && it.Fix == "" {
			t.Errorf("%s is %s without a fix", it.ID, it.Status)
		}
	}
	if got := strings.Join(ids, " "); got != "landlock seccomp cgroups mountns netns userns privileges state" {
		t.Errorf("items %s", got)
	}
	want := true
	for _, id := range []string{"landlock", "seccomp", "cgroups", "mountns", "netns"} {
		if mustItem(t, r, id).Status != StatusOK {
			want = false
		}
	}
	if r.OK != want || r.OK != computeOK(r.Checks) {
		t.Errorf("OK = %v, but the strict items say %v", r.OK, want)
	}

	abi := kernelABI()
	ll := mustItem(t, r, "landlock")
	if r.Host.LandlockABI != abi {
		t.Errorf("landlock ABI %d, the kernel says %d", r.Host.LandlockABI, abi)
	}
	switch {
	case abi >= strictABI:
		if ll.Status != StatusOK || !strings.HasPrefix(ll.Detail, "ABI "+strconv.Itoa(abi)+" (errata ") {
			t.Errorf("landlock: %+v", ll)
		}
	case abi > 0:
		if ll.Status != StatusDegraded {
			t.Errorf("landlock: %+v", ll)
		}
	default:
		if ll.Status != StatusMissing {
			t.Errorf("landlock: %+v", ll)
		}
	}
	if m := cgroupModeByStatfs(); m != "" && r.Host.CgroupMode != m {
		t.Errorf("cgroup mode %q, statfs says %q", r.Host.CgroupMode, m)
	}
}

func TestCheckThisHost(t *testing.T) {
	start := time.Now()
	r := check()
	// How long it takes is measured (BenchmarkCheck), not asserted: a
	// busy host makes it slower.
	t.Logf("Check took %v\n%s", time.Since(start), r.Text())
	checkConsistent(t, r)
	if r.Host.EUID != os.Geteuid() || r.Host.Kernel == "" || r.Host.Arch == "" {
		t.Errorf("host facts: %+v", r.Host)
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	st := hostfacts.ParseStatus(string(b))
	if os.Geteuid() == 0 && st.HasCap(capSysAdmin) && st.Seccomp != 2 {
		for _, id := range []string{"mountns", "netns"} {
			if it := mustItem(t, r, id); it.Status != StatusOK || !strings.Contains(it.Detail, "CAP_SYS_ADMIN") {
				t.Errorf("as root: %+v", it)
			}
		}
		if cg := mustItem(t, r, "cgroups"); r.Host.CgroupMode != "unavailable" && cg.Status != StatusOK {
			t.Errorf("as root: %+v", cg)
		}
	}
	var back Report
	b, err = json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil || back.OK != r.OK || len(back.Checks) != len(r.Checks) {
		t.Errorf("JSON round trip: %v, %+v", err, back)
	}
}

// TestCheckUnprivileged re-executes the test binary as uid 65534 in its
// helper mode and checks the answers a user without privileges gets.
func TestCheckUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root to switch to uid 65534")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The build directory is private to root: copy the binary where
	// nobody can run it.
	dir, err := os.MkdirTemp("", "doctor-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "doctor.test")
	copyFile(t, self, bin)

	cmd := exec.Command(bin)
	cmd.Dir = "/"
	// A -race binary sleeps a second at exit unless told not to.
	cmd.Env = []string{helperEnv + "=check", "PATH=/usr/bin:/bin", "GORACE=atexit_sleep_ms=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, stderr.String())
	}
	var r Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("helper output: %v\n%s", err, out)
	}
	r.color = false
	t.Logf("as uid 65534:\n%s", r.Text())
	if r.Host.UID != 65534 || r.Host.EUID != 65534 {
		t.Fatalf("ran as %d/%d", r.Host.UID, r.Host.EUID)
	}
	checkConsistent(t, r)

	priv := mustItem(t, r, "privileges")
	if !strings.Contains(priv.Detail, "-SYS_ADMIN -NET_ADMIN -SYS_PTRACE") {
		t.Errorf("privileges: %+v", priv)
	}
	// Whether user namespaces work for nobody depends on the sysctls; the
	// report must agree with them.
	// (The sysctls are the same for root.)
	facts := hostfacts.Probe(ProbeOptions())
	blocked, _ := usernsBlock(nsFactsOf(facts, facts.Doctor, Host{}))
	for _, id := range []string{"userns", "mountns", "netns"} {
		it := mustItem(t, r, id)
		if blocked == "" && (it.Status != StatusOK || !strings.Contains(it.Detail, "uid 65534 mapped to itself")) {
			t.Errorf("%s for nobody: %+v", id, it)
		}
		if blocked != "" && (it.Status != StatusMissing || !strings.Contains(it.Detail, blocked)) {
			t.Errorf("%s for nobody (sysctls: %s): %+v", id, blocked, it)
		}
	}
	// Nobody's cgroup is delegated to nobody on a stock host.
	if cg := mustItem(t, r, "cgroups"); r.Host.CgroupMode != "unavailable" {
		// The advice is this host's: a systemd user scope only where
		// systemd runs.
		if cg.Status != StatusMissing || strings.Contains(cg.Fix, "systemd-run --user --scope -p Delegate=yes") != r.Host.Systemd || !strings.Contains(notes(cg), "uid 65534 cannot create a group") {
			t.Errorf("cgroups for nobody: %+v", cg)
		}
	}
	if r.OK {
		t.Error("nobody cannot have the whole strict model here")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCheck: what one doctor run costs on this host (its probes
// included).
func BenchmarkCheck(b *testing.B) {
	for b.Loop() {
		check()
	}
}
