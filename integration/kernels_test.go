package integration

// What holds on every kernel the VM suite boots (5.10 to 7.3): the tests
// here name the kernel feature each check depends on and skip by that
// name where the kernel lacks it.

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
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
