package sockmed

import (
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Capabilities are per thread. The supervisor may hold some (run as root:
// all of them); the program holds none. A call the supervisor makes for the
// program (the lookup of a socket's pathname and the socket call itself)
// runs on a thread locked to its goroutine whose effective set is emptied
// for the call and given back after: whatever reaches the kernel is checked
// as for the capability-less program (a socket file's mode bits and every
// directory on its way, SO_MARK, a netlink message to another socket or a
// multicast group). The permitted set stays, so that the thread can take
// its effective set back; only this code could, and nothing the program
// controls runs on the thread meanwhile. One capset before and one after:
// a window per call, not a thread for the program's calls, which would
// cost every call a hand-over between threads.

// deputyCaps are the supervisor's capabilities, read once.
var deputyCaps struct {
	once sync.Once
	err  error
	// held are the sets as they are; none the same without the
	// effective set; any says the effective set is not empty.
	held, none [2]unix.CapUserData
	any        bool
}

func loadCaps() {
	d := &deputyCaps
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if d.err = unix.Capget(&hdr, &d.held[0]); d.err != nil {
		return
	}
	d.none = d.held
	d.none[0].Effective, d.none[1].Effective = 0, 0
	d.any = d.held[0].Effective != 0 || d.held[1].Effective != 0
}

// capset sets this thread's capabilities to sets.
func capset(sets [2]unix.CapUserData) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	return unix.Capset(&hdr, &sets[0])
}

// asProgram runs f on this goroutine's thread with no effective
// capability, and reports false, without running f, when the capabilities
// could not be dropped.
func asProgram(f func()) bool {
	d := &deputyCaps
	d.once.Do(loadCaps)
	if d.err != nil {
		return false
	}
	if !d.any {
		f()
		return true
	}
	runtime.LockOSThread()
	if err := capset(d.none); err != nil {
		runtime.UnlockOSThread()
		return false
	}
	defer func() {
		if err := capset(d.held); err != nil {
			// Raising the effective set within the permitted one does
			// not fail; a thread left without it must not go back to
			// running the supervisor's other work.
			panic("sockmed: taking the supervisor's capabilities back: " + err.Error())
		}
		runtime.UnlockOSThread()
	}()
	f()
	return true
}
