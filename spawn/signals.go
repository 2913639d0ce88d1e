package spawn

/*
#include "recipe.h"
int se_helper_binary(void);
*/
import "C"

import (
	"os"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
)

// The helper's forwarded signals under the Go runtime. The runtime takes
// SIGTERM, SIGINT, SIGHUP and SIGQUIT in every thread it makes, whatever
// mask the process started with, and without os/signal it would end the
// process with them; so the helper's binary (not a test binary) catches
// those, and passes each, as it comes, to the runner of the run it serves
// (Service's sig pipe), which alone decides what to do with it. Signals
// that come before there is a run (while Go decides) wait here and go to
// the first service made. A command that runs nothing gives them their
// default actions back (StopRelaying).
//
// signal.Notify takes a round trip to the runtime's signal thread for each
// signal, which in a fresh process is a few hundred microseconds; so this
// package's init calls it on a goroutine, beside the decision, and a run
// waits for it (SignalsCaught) before anything is made for it, as does
// the first service (relayTo). A signal that comes before Notify has
// returned has the runtime's default action, as one before any init has:
// the helper ends of it while it only decides.
//
// The other forwarded signals stay blocked in every thread, as the
// constructor blocked them, and the runner reads them from its signalfd
// under Go as without it: catching them too cost a round trip to the
// runtime's signal thread each, on every start Go decides.
// TestSignalsReachTheProgram (integration) sends each to a run Go decided.
var runtimeTaken = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT}

// relay holds what the relaying goroutine needs: where to write, and what
// came before there was a run.
var relay struct {
	mu      sync.Mutex
	to      int // the service's sig pipe, or -1
	pending []byte
	ch      chan os.Signal
	// caught is closed once signal.Notify has returned.
	caught chan struct{}
}

func init() {
	relay.to = -1
	if C.se_helper_binary() == 0 {
		return
	}
	relay.ch = make(chan os.Signal, 64)
	relay.caught = make(chan struct{})
	go func() {
		signal.Notify(relay.ch, runtimeTaken...)
		close(relay.caught)
		for s := range relay.ch {
			n, ok := s.(unix.Signal)
			if !ok {
				continue
			}
			relay.mu.Lock()
			if relay.to >= 0 {
				_, _ = unix.Write(relay.to, []byte{byte(n)})
			} else if len(relay.pending) < 64 {
				relay.pending = append(relay.pending, byte(n))
			}
			relay.mu.Unlock()
		}
	}()
}

// SignalsCaught returns once the signals Go's runtime takes are caught
// (in a test binary, at once): from then on each reaches the run's runner.
func SignalsCaught() {
	if relay.caught != nil {
		<-relay.caught
	}
}

// relayTo sends the signals caught from now on, and those waiting, to fd.
func relayTo(fd int) {
	SignalsCaught()
	relay.mu.Lock()
	defer relay.mu.Unlock()
	relay.to = fd
	if len(relay.pending) > 0 {
		_, _ = unix.Write(fd, relay.pending)
		relay.pending = nil
	}
}

// StopRelaying gives the forwarded signals their default actions back, for
// a command that runs nothing (doctor, --explain, a refusal).
func StopRelaying() {
	if relay.ch == nil {
		return
	}
	SignalsCaught()
	signal.Reset(runtimeTaken...)
}
