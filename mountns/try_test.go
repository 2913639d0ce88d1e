package mountns

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
)

// TestTryRefusal: an attempt the kernel refuses at once is that refusal,
// with its step and errno (CLONE_NEWUSER with CLONE_FS is EINVAL).
func TestTryRefusal(t *testing.T) {
	a := Try(unix.CLONE_NEWUSER|unix.CLONE_FS, true, 0)
	if a.OK || a.TimedOut || a.Step != "clone" || a.Errno != unix.EINVAL {
		t.Fatalf("%+v", a)
	}
}

// TestTryRunFlags: where this process may have them, a run's namespaces
// are created, a procfs mounted and loopback brought up.
func TestTryRunFlags(t *testing.T) {
	priv := hasCap(capSysAdmin)
	a := Try(runFlags|unix.CLONE_NEWNET, !priv, 0)
	if !a.OK && os.Geteuid() == 0 && priv && !seccompFiltered() {
		t.Fatalf("root, unfiltered: %+v", a)
	}
	t.Logf("%+v", a)
}

// BenchmarkTry is the cost of one attempt with a run's namespaces (the
// caller's part: the child's teardown runs on).
func BenchmarkTry(b *testing.B) {
	priv := hasCap(capSysAdmin)
	for _, c := range []struct {
		name  string
		flags uintptr
	}{{"net", runFlags | unix.CLONE_NEWNET}, {"nonet", runFlags}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if a := Try(c.flags, !priv, 0); !a.OK {
					testcap.Skipf(b, testcap.Namespaces, "%v", a.Failure())
				}
			}
		})
	}
}
