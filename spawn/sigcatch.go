package spawn

/*
#include "sigcatch.h"

// cgo's own wrapper of a void function without arguments (for
// se_release_signals) leaves its argument unused (Go issue 28095); this file
// holds no C of ours that the pragma could hide a warning in.
#pragma GCC diagnostic ignored "-Wunused-parameter"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Caught is a set of signals caught since CatchSignals, delivered on C.
type Caught struct {
	// C receives each caught signal, in order, but SIGCHLD; a burst beyond
	// its buffer waits in the pipe.
	C <-chan syscall.Signal
	// Child receives a value after SIGCHLDs (one for several that came
	// close together), when SIGCHLD is among the signals caught.
	Child <-chan struct{}
	// Stopped is closed by Release.
	Stopped <-chan struct{}

	child chan struct{}
	r     *os.File
	w     int
	done  chan struct{}
	once  sync.Once
}

var catching sync.Mutex

// CatchSignals catches sigs without the thread os/signal.Notify starts: a C
// handler writes each one to a non-blocking pipe, which a goroutine reads
// through the runtime's poller. Release puts the actions found before back.
// One set at a time per process: a second call before Release fails.
func CatchSignals(sigs []syscall.Signal) (*Caught, error) {
	if !catching.TryLock() {
		return nil, fmt.Errorf("signals: already caught")
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		catching.Unlock()
		return nil, fmt.Errorf("signals: pipe: %w", err)
	}
	return catchLocked(p[0], p[1], sigs)
}

// catchOn catches sigs into the pipe r, w that the runner made and still
// catches them into: the handler goes in again, the pipe is kept.
func catchOn(r, w int, sigs []syscall.Signal) (*Caught, error) {
	if !catching.TryLock() {
		return nil, fmt.Errorf("signals: already caught")
	}
	return catchLocked(r, w, sigs)
}

// catchLocked installs the handler for sigs, writing into w, and reads r;
// catching is held.
func catchLocked(r, w int, sigs []syscall.Signal) (*Caught, error) {
	p := [2]int{r, w}
	cs := make([]C.int, len(sigs))
	for i, s := range sigs {
		cs[i] = C.int(s)
	}
	var ret C.int
	if len(cs) > 0 {
		ret = C.se_catch_signals(C.int(p[1]), &cs[0], C.int(len(cs)))
	}
	if ret < 0 {
		C.se_release_signals()
		unix.Close(p[0])
		unix.Close(p[1])
		catching.Unlock()
		return nil, fmt.Errorf("signals: sigaction: %w", unix.Errno(-ret))
	}
	ch := make(chan syscall.Signal, 16)
	c := &Caught{C: ch, r: os.NewFile(uintptr(p[0]), "signals"), w: p[1], done: make(chan struct{}), child: make(chan struct{}, 1)}
	c.Child, c.Stopped = c.child, c.done
	go func() {
		var buf [64]byte
		for {
			n, err := c.r.Read(buf[:])
			for _, b := range buf[:n] {
				if syscall.Signal(b) == syscall.SIGCHLD {
					select {
					case c.child <- struct{}{}:
					default: // one is pending already
					}
					continue
				}
				select {
				case ch <- syscall.Signal(b):
				case <-c.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return c, nil
}

// Release restores the signal actions found by CatchSignals. Signals caught
// and not yet read are dropped.
func (c *Caught) Release() {
	c.once.Do(func() {
		C.se_release_signals()
		close(c.done)
		unix.Close(c.w)
		c.r.Close()
		catching.Unlock()
	})
}
