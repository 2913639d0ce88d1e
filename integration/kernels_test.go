package integration

// What holds on every kernel the VM suite boots (5.10 to 7.3): the tests
// here name the kernel feature each check depends on and skip by that
// name where the kernel lacks it.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
)

// TestOutsideProcessSurvivesSIGKILL: a sandboxed program cannot SIGKILL a
// process of the same user outside the sandbox, in both modes, for root and
// nobody. On a kernel without Landlock signal scoping (before ABI 6: Debian
// 12's 6.1 has ABI 2) only the PID namespace stops it: the outside pid
// names nothing inside. The victims are the test's own sleep processes; a
// control victim is killed the same way from outside the sandbox, so the
// kill itself is known to work.
func TestOutsideProcessSurvivesSIGKILL(t *testing.T) {
	users := isoAnyUser(t)
	for _, u := range users {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := isoWorkspace(t, u)
				start := func() *exec.Cmd {
					c := exec.Command("/bin/sleep", "300")
					if u.cred != nil {
						c.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
					}
					if err := c.Start(); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
					return c
				}
				victim, control := start(), start()
				// The same kill(1), as the same user, unsandboxed: it works.
				kill := exec.Command("/bin/kill", "-KILL", fmt.Sprint(control.Process.Pid))
				if u.cred != nil {
					kill.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
				}
				if out, err := kill.CombinedOutput(); err != nil {
					t.Fatalf("control: kill -KILL %d outside the sandbox failed: %v %s", control.Process.Pid, err, out)
				}
				if err := control.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
					t.Fatalf("control victim did not die of SIGKILL: %v", err)
				}

				pid := victim.Process.Pid
				script := fmt.Sprintf(`echo started
if test -e /proc/%[1]d; then echo "inside-pid-exists"; fi
if kill -KILL %[1]d 2>/dev/null; then echo "kill=ok"; else echo "kill=refused"; fi
echo done`, pid)
				r := isoRun(t, w, u, mode, runOpts{}, "/bin/sh", "-c", script)
				if r.code != 0 || !strings.HasPrefix(r.stdout, "started\n") || !strings.Contains(r.stdout, "done") {
					t.Fatalf("the program did not run: %v", r)
				}
				// Give a signal that got through the moment to act.
				time.Sleep(100 * time.Millisecond)
				if err := syscall.Kill(pid, 0); err != nil {
					t.Fatalf("the outside victim %d is gone after the sandboxed kill: %v (%v)", pid, err, r)
				}
				if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
					if f := strings.Fields(string(st)); len(f) > 2 && (f[2] == "Z" || f[2] == "X") {
						t.Fatalf("the outside victim %d is dead (state %s) after the sandboxed kill (%v)", pid, f[2], r)
					}
				}
				if strings.Contains(r.stdout, "inside-pid-exists") {
					// The number names one of the sandbox's own processes
					// (a PID namespace reuses small numbers only): what it
					// killed was its own.
					t.Logf("pid %d exists inside the sandbox too; the victim survived", pid)
				} else if !strings.Contains(r.stdout, "kill=refused") {
					t.Errorf("kill -KILL %d inside reported success, yet the victim lives: %v", pid, r)
				}
			})
		}
	}
}

// kernelHasLandlock asks the kernel itself (landlock_create_ruleset's
// version query), not the helper.
func kernelHasLandlock() bool {
	v, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	return errno == 0 && v > 0
}

// realBinary is the helper itself; binary is a wrapper around it on a
// kernel without Landlock (degradedWithoutLandlock).
var realBinary string

// degradedWithoutLandlock: on a kernel without Landlock every run is
// refused unless degradation is allowed (TestNoLandlockRefusedThenDegraded
// checks that refusal and what runs then), so binary becomes a wrapper in
// dir that puts --allow-degraded first and execs the helper (same pid, same
// executable name), and run drops the one notice line that reports it
// (withoutNoLandlockNotice); the tests that need Landlock itself skip by its
// name there (fsOpts, needLandlock).
func degradedWithoutLandlock(dir string) error {
	realBinary = binary
	if kernelHasLandlock() {
		return nil
	}
	real := filepath.Join(dir, "real", filepath.Base(binary))
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return err
	}
	if err := os.Rename(binary, real); err != nil {
		return err
	}
	script := `#!/bin/sh
# The integration tests' wrapper on a kernel without Landlock: every run
# but doctor's gets --allow-degraded first.
for a; do
	if [ "$a" = --allow-degraded ]; then exec '` + real + `' "$@"; fi
done
if [ "$1" = doctor ]; then exec '` + real + `' "$@"; fi
exec '` + real + `' --allow-degraded "$@"
`
	realBinary = real
	return os.WriteFile(binary, []byte(script), 0o755)
}

// TestNoLandlockRefusedThenDegraded: on a kernel without Landlock (Debian
// 11's 5.10) the helper refuses with one line naming it, and with
// --allow-degraded runs in exact mode with what exists: the mount view
// still keeps writes outside the writable roots out, and the report says
// Landlock is missing.
func TestNoLandlockRefusedThenDegraded(t *testing.T) {
	if kernelHasLandlock() {
		t.Skip("needs a kernel without Landlock (the VM suite's 5.10)")
	}
	w := newWorkspace(t)
	outside := filepath.Join(t.TempDir(), "outside")
	base := []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root), "--fs-mode", "exact"}
	for _, mode := range []string{"exact", "landlock"} {
		args := []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root), "--fs-mode", mode, "--", "/bin/true"}
		cmd := exec.Command(realBinary, args...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "LANG=C"}, w.env()...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 125 {
			t.Fatalf("%s mode without Landlock and without --allow-degraded: %v, stderr %q; want exit 125", mode, err, stderr.String())
		}
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "no Landlock") || !strings.Contains(lines[0], "--allow-degraded") {
			t.Errorf("%s mode refusal is not one line naming Landlock and --allow-degraded: %q", mode, stderr.String())
		}
	}
	report := filepath.Join(t.TempDir(), "report.json")
	r := run(t, runOpts{env: w.env(), dir: w.root}, append(base, "--allow-degraded", "--report-file", report, "--",
		"/bin/sh", "-c", "echo x > "+outside+" && echo wrote; echo y > inside && echo inside")...)
	if r.code != 0 || !strings.Contains(r.stdout, "inside") || strings.Contains(r.stdout, "wrote") {
		t.Fatalf("exact mode with --allow-degraded: %v; want the write inside the root only", r)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("%s was written from the sandbox", outside)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"right": "landlock"`) && !strings.Contains(string(b), `"right":"landlock"`) {
		t.Errorf("the report does not list the missing Landlock as a gap:\n%s", b)
	}
}

// noLandlockNotice starts the line the helper prints, run with
// --allow-degraded on a kernel without Landlock.
const noLandlockNotice = "sandbox-executable: degraded (--allow-degraded): the kernel has no Landlock"

// withoutNoLandlockNotice drops that line from a run's stderr on a kernel
// without Landlock, where every run prints it (degradedWithoutLandlock).
func withoutNoLandlockNotice(stderr string) string {
	if kernelHasLandlock() || !strings.Contains(stderr, noLandlockNotice) {
		return stderr
	}
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if !strings.HasPrefix(l, noLandlockNotice) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// needLandlock skips a test of what only Landlock enforces, by its name.
func needLandlock(t *testing.T) {
	t.Helper()
	if !kernelHasLandlock() {
		testcap.Skipf(t, testcap.Landlock, "needs Landlock: this kernel has none")
	}
}

// kernelBefore reports whether the running kernel is older than
// major.minor (a feature that came with a release and has no probe of its
// own from outside).
func kernelBefore(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma < major || (ma == major && mi < minor)
}
