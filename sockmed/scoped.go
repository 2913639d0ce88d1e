package sockmed

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Scoped is an OS thread of the supervisor whose Landlock domain scopes
// abstract unix sockets (ABI 6) and nothing else. The program must be
// started from it (Do(spawn)): the program's own domain is then nested in
// this one, so that a connect made here reaches the abstract sockets the
// sandbox made, and Landlock refuses the host's, exactly as it would for a
// connect made by the program. The thread lives until Stop, and is then
// ended (its goroutine exits still locked to it): it is also the thread the
// program's parent-death signal is tied to, so Stop comes only after the
// program's tree is gone.
type Scoped struct {
	reqs chan func()
	quit chan struct{}
	once sync.Once
}

// StartScoped starts the thread.
func StartScoped() (*Scoped, error) {
	s := &Scoped{reqs: make(chan func()), quit: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := scopeThisThread(); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for {
			select {
			case f := <-s.reqs:
				f()
			case <-s.quit:
				return
			}
		}
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return s, nil
}

// scopeThisThread restricts the calling thread, and it alone, to a Landlock
// domain that handles no access right and scopes abstract unix sockets.
func scopeThisThread() error {
	// Per thread, as the domain is: a thread that never execs.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("scoped thread: no_new_privs: %w", err)
	}
	attr := struct{ fs, net, scoped uint64 }{scoped: unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return fmt.Errorf("scoped thread: landlock ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	// The raw call: go-landlock would restrict every thread.
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("scoped thread: landlock restrict: %w", e)
	}
	return nil
}

// Do runs f on the thread and waits for it; false when the thread is
// stopped (f did not run). Calls run one at a time.
func (s *Scoped) Do(f func()) bool {
	done := make(chan struct{})
	select {
	case s.reqs <- func() { defer close(done); f() }:
	case <-s.quit:
		return false
	}
	<-done
	return true
}

// Stop ends the thread once what runs on it returns, without waiting for
// that: a connect blocked there must not hold up the end of the run.
func (s *Scoped) Stop() {
	s.once.Do(func() { close(s.quit) })
}
