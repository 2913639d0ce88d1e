package deputy

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/landlock"
	"sandbox-executable/spawn"
)

// TestThreadConfinesItselfAlone: the Thread's Landlock domain, its
// no_new_privs and its empty capability sets hold on it, and on no thread
// the runtime makes afterwards (the runtime clones new threads from its
// template thread, never from a locked one: were that to change in a Go
// release, this test fails).
func TestThreadConfinesItselfAlone(t *testing.T) {
	abi := landlock.ABI()
	if abi < 1 {
		t.Skip("no Landlock")
	}
	inside, outside := t.TempDir(), t.TempDir()
	dir, err := unix.Open(inside, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dir)
	th, err := NewThread(func() error { return spawn.RestrictThread(uint64(landlock.WriterRights(abi)), []int{dir}) })
	if err != nil {
		t.Fatal(err)
	}
	var inErr, outErr error
	var nnp int
	th.Do(func() {
		inErr = os.WriteFile(filepath.Join(inside, "f"), nil, 0o600)
		outErr = os.WriteFile(filepath.Join(outside, "f"), nil, 0o600)
		nnp, _ = unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	})
	if inErr != nil || !errors.Is(outErr, unix.EACCES) || nnp != 1 {
		t.Fatalf("on the thread: inside %v, outside %v (want EACCES), no_new_privs %d", inErr, outErr, nnp)
	}
	// Many new threads, each locked goroutine below needs one of its own,
	// made while the confined thread keeps blocking and waking (when it
	// blocks it hands its P on, and may be where a new thread is asked
	// for).
	stop := make(chan struct{})
	busy := make(chan struct{})
	go func() {
		defer close(busy)
		for {
			select {
			case <-stop:
				return
			default:
				th.Do(func() { runtime.Gosched() })
			}
		}
	}()
	defer func() { close(stop); <-busy }()
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	hold := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := os.WriteFile(filepath.Join(outside, "g"+strconv.Itoa(i)), nil, 0o600); err != nil {
				errs <- err
			}
			if v, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); v != 0 && !startedWithNNP {
				errs <- errors.New("a new thread has no_new_privs")
			}
			<-hold
		}(i)
	}
	close(hold)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a thread made after the confined one: %v", err)
	}
}

// startedWithNNP: the test process itself may run with no_new_privs (a
// sandbox around the tests), which its threads then all have.
var startedWithNNP = func() bool {
	v, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	return v == 1
}()
