// Package selftest is the VM harness's own test. Every test skips on the host;
// run it inside the guest with
//
//	integration/vm/run-tests.sh ./integration/vm/selftest/
//	go test -count=1 -exec "$PWD/integration/vm/exec" ./integration/vm/selftest/
//
// Three variables make it misbehave on purpose, to show that the harness turns
// a failing test, a kernel panic and a hang into failures (guest only):
// SE_VM_SELFTEST_FAIL=1, SE_VM_SELFTEST_PANIC=1, SE_VM_SELFTEST_HANG=1.
package selftest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbox-executable/internal/testcap"
)

const (
	cgroupRoot        = "/sys/fs/cgroup"
	cgroup2SuperMagic = 0x63677270
	hogEnv            = "SE_VM_SELFTEST_HOG"
)

func TestMain(m *testing.M) {
	// Re-executed as the memory hog of TestOOMKillInChildCgroup.
	if os.Getenv(hogEnv) == "1" {
		hog()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// inGuest skips the test unless it runs in the harness's guest. The marker is
// set by integration/vm/exec; /run/se-vm/init exists only in the guest, so an
// exported SE_VM_GUEST on the host is not enough to, say, panic the host.
func inGuest(t *testing.T) {
	t.Helper()
	if os.Getenv("SE_VM_GUEST") != "1" {
		t.Skip("not in the VM guest (SE_VM_GUEST unset): run through integration/vm/exec")
	}
	if _, err := os.Stat("/run/se-vm/init"); err != nil {
		t.Fatalf("SE_VM_GUEST=1 but no /run/se-vm/init: %v", err)
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root in the guest (uid %d; SE_VM_USER=%s)", os.Getuid(), os.Getenv("SE_VM_USER"))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func writeFile(t *testing.T, path, value string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(value), 0); err != nil {
		t.Fatalf("write %q to %s: %v", value, path, err)
	}
}

func hasFields(list string, want ...string) []string {
	have := map[string]bool{}
	for _, f := range strings.Fields(list) {
		have[f] = true
	}
	var missing []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	return missing
}

// ownCgroup returns this process's cgroup v2 path, relative to the root.
func ownCgroup(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, "/proc/self/cgroup"), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	t.Fatal("no unified (0::) line in /proc/self/cgroup")
	return ""
}

func TestCgroup2Unified(t *testing.T) {
	inGuest(t)
	var st syscall.Statfs_t
	if err := syscall.Statfs(cgroupRoot, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != cgroup2SuperMagic {
		t.Fatalf("%s is fs type %#x, want cgroup2 (%#x)", cgroupRoot, st.Type, cgroup2SuperMagic)
	}
	if m := hasFields(readFile(t, cgroupRoot+"/cgroup.controllers"), "cpu", "memory", "pids"); m != nil {
		t.Errorf("root cgroup.controllers lacks %v", m)
	}
	if m := hasFields(readFile(t, cgroupRoot+"/cgroup.subtree_control"), "cpu", "memory", "pids"); m != nil {
		t.Errorf("root cgroup.subtree_control lacks %v", m)
	}
	own := ownCgroup(t)
	want := "/" + strings.TrimPrefix(os.Getenv("SE_VM_CGROUP"), "/")
	if _, set := os.LookupEnv("SE_VM_CGROUP"); !set {
		want = "/se-payload"
	}
	if own != want {
		t.Errorf("payload runs in cgroup %q, want %q", own, want)
	}
	if m := hasFields(readFile(t, filepath.Join(cgroupRoot, own, "cgroup.controllers")), "cpu", "memory", "pids"); m != nil {
		t.Errorf("own cgroup %s lacks controllers %v", own, m)
	}
	mountinfo := readFile(t, "/proc/self/mountinfo")
	found := false
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == cgroupRoot {
			found = true
			if !strings.Contains(line, "nsdelegate") {
				t.Errorf("cgroup2 mounted without nsdelegate: %s", line)
			}
		}
	}
	if !found {
		t.Errorf("%s not in mountinfo", cgroupRoot)
	}
}

// newCgroup creates a fresh cgroup under the root (where cpu, memory and pids
// are enabled; our own cgroup holds processes, so the no-internal-processes
// rule keeps it from handing controllers to children) and removes it at the end.
func newCgroup(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(cgroupRoot, fmt.Sprintf("selftest-%s-%d", name, os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// rmdir fails with EBUSY until the last member is reaped.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := syscall.Rmdir(dir)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("rmdir %s: %v", dir, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return dir
}

func TestOOMKillInChildCgroup(t *testing.T) {
	inGuest(t)
	needRoot(t)
	dir := newCgroup(t, "oom")
	writeFile(t, dir+"/memory.max", strconv.Itoa(32<<20))
	if _, err := os.Stat(dir + "/memory.swap.max"); err == nil {
		writeFile(t, dir+"/memory.swap.max", "0")
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)

	// Born inside the cgroup (clone3 CLONE_INTO_CGROUP), as the sandbox does it.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hogEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("memory hog: want it killed, got err=%v, output:\n%s", err, out.String())
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("memory hog ended with %v, want SIGKILL; output:\n%s", ee, out.String())
	}
	events := readFile(t, dir+"/memory.events")
	var oomKill int
	for _, line := range strings.Split(events, "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			oomKill, _ = strconv.Atoi(v)
		}
	}
	if oomKill < 1 {
		t.Errorf("memory.events oom_kill = %d, want > 0:\n%s", oomKill, events)
	}
	t.Logf("hog: %v; memory.events: %s", ee, strings.ReplaceAll(events, "\n", ", "))
}

// hog touches up to 512 MiB, far above the 32 MiB memory.max: it must be
// OOM-killed long before it returns.
func hog() {
	var keep [][]byte
	for i := 0; i < 128; i++ {
		b := make([]byte, 4<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	fmt.Println("hog survived", len(keep)*4, "MiB")
}

func TestCPUAndPidsLimits(t *testing.T) {
	inGuest(t)
	needRoot(t)
	dir := newCgroup(t, "limits")
	writeFile(t, dir+"/cpu.max", "50000 100000")
	if got := readFile(t, dir+"/cpu.max"); got != "50000 100000" {
		t.Errorf("cpu.max = %q", got)
	}
	writeFile(t, dir+"/pids.max", "2")
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// Two processes fit in pids.max=2; the third must be refused at clone.
	var started []*exec.Cmd
	defer func() {
		for _, c := range started {
			c.Process.Kill()
			c.Wait()
		}
	}()
	for i := 1; i <= 3; i++ {
		c := exec.Command("sleep", "30")
		c.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		err := c.Start()
		switch {
		case i < 3 && err != nil:
			t.Fatalf("process %d under pids.max=2: %v", i, err)
		case i == 3 && err == nil:
			t.Errorf("process 3 started under pids.max=2")
		case i == 3 && !errors.Is(err, syscall.EAGAIN):
			t.Errorf("process 3 under pids.max=2: %v, want EAGAIN", err)
		}
		if err == nil {
			started = append(started, c)
		}
	}
	if ev := readFile(t, dir+"/pids.events"); ev == "max 0" {
		t.Errorf("pids.events = %q, want max > 0", ev)
	}
}

func TestUserlandTools(t *testing.T) {
	inGuest(t)
	if os.Getenv("SE_VM_ROOT") != "hostfs" {
		t.Skip("guest root is not the host's filesystem: host tools are absent")
	}
	for _, tc := range []struct {
		tool string
		args []string
		want string
	}{
		{"bash", []string{"-c", "echo $((6*7))"}, "42"},
		{"python3", []string{"-c", "print(6*7)"}, "42"},
		{"git", []string{"--version"}, "git version"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel() // exec is slow in the guest; the guest has 2 CPUs
			path, err := exec.LookPath(tc.tool)
			if err != nil {
				testcap.Skipf(t, testcap.Installed, "%s not installed on the host", tc.tool)
			}
			out, err := exec.Command(path, tc.args...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("%s %q: %v, output %q (want %q)", path, tc.args, err, out, tc.want)
			}
		})
	}
	t.Run("git-commit", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("git"); err != nil {
			testcap.Skipf(t, testcap.Installed, "git not installed on the host")
		}
		dir := t.TempDir()
		script := "git init -q . && echo x > f && git add f && " +
			"git -c user.name=t -c user.email=t@example.invalid commit -qm x && git log --oneline"
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("git in %s: %v\n%s", dir, err, out)
		}
	})
}

func TestWritablePlaces(t *testing.T) {
	inGuest(t)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{home, os.TempDir(), "/var/tmp", t.TempDir()} {
		f, err := os.CreateTemp(dir, "selftest-*")
		if err != nil {
			t.Errorf("%s is not writable: %v", dir, err)
			continue
		}
		f.Close()
		os.Remove(f.Name())
	}
	// The host's root is shared read-only: nothing a test does reaches it.
	err = os.WriteFile("/usr/.se-vm-selftest", nil, 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("writing under /usr: got %v, want EROFS (host root must be read-only)", err)
		os.Remove("/usr/.se-vm-selftest")
	}
}

func TestLandlockABI(t *testing.T) {
	inGuest(t)
	v, _, errno := syscall.Syscall(444, 0, 0, 1) // landlock_create_ruleset(NULL, 0, VERSION)
	if errno == syscall.ENOSYS && kernelBefore(5, 13) {
		testcap.Skipf(t, testcap.Landlock, "Landlock: not in this kernel (before 5.13: Debian 11's 5.10)")
	}
	if errno != 0 {
		t.Fatalf("Landlock unavailable in the guest: %v", errno)
	}
	t.Logf("Landlock ABI %d", v)
}

func TestRunAsUser(t *testing.T) {
	inGuest(t)
	user := os.Getenv("SE_VM_USER")
	if user == "" || user == "root" {
		if os.Getuid() != 0 {
			t.Errorf("SE_VM_USER unset but uid is %d, want 0", os.Getuid())
		}
		return
	}
	if user == "nobody" && os.Getuid() != 65534 {
		t.Errorf("SE_VM_USER=nobody but uid is %d", os.Getuid())
	}
	if os.Getuid() == 0 {
		t.Errorf("SE_VM_USER=%s but running as root", user)
	}
}

// The three deliberate failures, each off unless its variable is set.

func TestForcedFailure(t *testing.T) {
	inGuest(t)
	if os.Getenv("SE_VM_SELFTEST_FAIL") != "1" {
		t.Skip("SE_VM_SELFTEST_FAIL=1 makes this test fail on purpose")
	}
	t.Fatal("failing on purpose (SE_VM_SELFTEST_FAIL=1)")
}

func TestForcedPanic(t *testing.T) {
	inGuest(t)
	if os.Getenv("SE_VM_SELFTEST_PANIC") != "1" {
		t.Skip("SE_VM_SELFTEST_PANIC=1 crashes the guest kernel on purpose")
	}
	// sysrq "c": immediate kernel crash; the harness must report a failure.
	if err := os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
	t.Fatal("the guest survived sysrq-trigger c")
}

func TestForcedHang(t *testing.T) {
	inGuest(t)
	if os.Getenv("SE_VM_SELFTEST_HANG") != "1" {
		t.Skip("SE_VM_SELFTEST_HANG=1 hangs until the harness's timeout on purpose")
	}
	time.Sleep(24 * time.Hour)
}

// kernelBefore reports whether the running kernel is older than major.minor.
func kernelBefore(major, minor int) bool {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return false
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	var ma, mi int
	if _, err := fmt.Sscanf(string(b), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma < major || (ma == major && mi < minor)
}
