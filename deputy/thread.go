package deputy

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Thread is an OS thread of the supervisor that acts for the program and
// for nothing else: it holds no capability at all (effective, permitted
// and inheritable sets emptied, for good) and whatever confinement confine
// gave it (a Landlock domain of its own: spawn.RestrictThread). Work is
// handed to it with Do. It is never given back to the Go runtime: its
// goroutine stays locked to it, and the runtime never clones a new thread
// from a locked one (it asks its template thread instead), so neither the
// confinement nor the lack of capabilities leaks to any other thread, and
// none of the supervisor's own work runs on it.
type Thread struct {
	work chan func()
}

// NewThread starts the thread and confines it (confine runs on it, after
// its capabilities are gone and with no_new_privs set on it alone, which
// an unprivileged Landlock domain needs).
func NewThread(confine func() error) (*Thread, error) {
	t := &Thread{work: make(chan func())}
	ready := make(chan error, 1)
	go t.loop(confine, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Thread) loop(confine func() error, ready chan<- error) {
	// Never unlocked: the thread ends with the goroutine, or with the
	// process.
	runtime.LockOSThread()
	var none [2]unix.CapUserData
	if err := capset(none); err != nil {
		ready <- fmt.Errorf("deputy: dropping every capability of the mediating thread: %w", err)
		return
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		ready <- fmt.Errorf("deputy: no_new_privs on the mediating thread: %w", err)
		return
	}
	if err := confine(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for f := range t.work {
		f()
	}
}

// Do runs f on the thread and returns when it has run.
func (t *Thread) Do(f func()) {
	done := make(chan struct{})
	t.work <- func() {
		defer close(done)
		f()
	}
	<-done
}
