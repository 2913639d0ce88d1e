package spawn

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCatchSignals: a signal sent to the process arrives on C, a child's
// exit on Child, a second catcher is refused while the first holds, and
// after Release the signals can be caught again.
func TestCatchSignals(t *testing.T) {
	c, err := CatchSignals([]syscall.Signal{unix.SIGUSR2, unix.SIGCHLD})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CatchSignals([]syscall.Signal{unix.SIGUSR1}); err == nil {
		t.Errorf("a second CatchSignals before Release succeeded")
	}
	if err := unix.Kill(unix.Getpid(), unix.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-c.C:
		if s != unix.SIGUSR2 {
			t.Errorf("caught %v, want SIGUSR2", s)
		}
	case <-time.After(10 * time.Second): // a bound, not a timing
		t.Fatal("SIGUSR2 never arrived")
	}
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Child:
	case <-time.After(10 * time.Second):
		t.Fatal("no SIGCHLD for a child's exit")
	}
	_ = cmd.Wait()
	c.Release()
	c.Release() // twice is once
	select {
	case <-c.Stopped:
	default:
		t.Errorf("Stopped not closed by Release")
	}
	c2, err := CatchSignals([]syscall.Signal{unix.SIGUSR2})
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	c2.Release()
}
