package supervisor

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"sandbox-executable/spawn"
)

// forward passes a signal the supervisor received on to the program, and
// says whether it did. Ctrl-C, Ctrl-\ and a resize reach the terminal's
// whole foreground group, the program included when it shares this
// process's: passing them on again would deliver them twice. A SIGCONT
// (the caller's fg or bg after the job stopped) continues a program that
// took the terminal at once, giving it the terminal back where the
// caller's shell gave it to this process's group.
func (s *session) forward(pid int, sig syscall.Signal) bool {
	if sig == unix.SIGCONT && s.term.Continue() {
		return true
	}
	if spawn.TerminalSentIt(sig) {
		return false
	}
	return unix.Kill(pid, sig) == nil
}

// followStops reads the program's stops the init says (spawn.Process.Notes)
// into the channel it returns, which closes when the init is gone; nil
// when there are none to follow. The supervisor follows each
// (spawn.Terminal.FollowStop). Bytes that are not a stop (the runner's
// "done", which Go's own wait makes redundant) are passed over.
func followStops(p *spawn.Process) <-chan syscall.Signal {
	if p == nil || p.Notes < 0 {
		return nil
	}
	// Read through the poller, with no thread blocked.
	_ = unix.SetNonblock(p.Notes, true)
	f := os.NewFile(uintptr(p.Notes), "init notes")
	p.Notes = -1
	ch := make(chan syscall.Signal, 4)
	go func() {
		defer close(ch)
		defer f.Close()
		var b [16]byte
		for {
			n, err := f.Read(b[:])
			for _, c := range b[:n] {
				if c > 0 && c < 32 {
					ch <- syscall.Signal(c)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}
