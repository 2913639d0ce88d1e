// Package deputy is what the supervisor needs to act for a sandboxed
// program with no more authority than the program has (the deputy rule,
// docs/design.md): a call made for the program runs without the
// supervisor's capabilities (AsProgram), or on a thread of its own that
// holds none and sits in a Landlock domain of its own (Thread); what the
// program asked is read once from its memory (Read, ReadString); a
// pathname it gave is looked up in its own view of the filesystem (Lookup).
// The socket mediation (sockmed) and the filesystem mediation (fsmed) both
// use it.
package deputy

import (
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Capabilities are per thread. The supervisor may hold some (run as root:
// all of them); the program holds none. A call the supervisor makes for the
// program (the lookup of a pathname, a socket call) runs on a thread locked
// to its goroutine whose effective set is emptied for the call and given
// back after: whatever reaches the kernel is checked as for the
// capability-less program (a file's mode bits and every directory on its
// way, SO_MARK, a netlink message to another socket or a multicast group).
// The permitted set stays, so that the thread can take its effective set
// back; only this code could, and nothing the program controls runs on the
// thread meanwhile. One capset before and one after: a window per call, not
// a thread for the program's calls, which would cost every call a hand-over
// between threads.

// held are the supervisor's capabilities, read once.
var held struct {
	once sync.Once
	err  error
	// sets are the sets as they are; none the same without the
	// effective set; any says the effective set is not empty.
	sets, none [2]unix.CapUserData
	any        bool
}

func loadCaps() {
	d := &held
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if d.err = unix.Capget(&hdr, &d.sets[0]); d.err != nil {
		return
	}
	d.none = d.sets
	d.none[0].Effective, d.none[1].Effective = 0, 0
	d.any = d.sets[0].Effective != 0 || d.sets[1].Effective != 0
}

// capset sets this thread's capabilities to sets.
func capset(sets [2]unix.CapUserData) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	return unix.Capset(&hdr, &sets[0])
}

// AsProgram runs f on this goroutine's thread with no effective
// capability, and reports false, without running f, when the capabilities
// could not be dropped.
func AsProgram(f func()) bool {
	d := &held
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
		if err := capset(d.sets); err != nil {
			// Raising the effective set within the permitted one does
			// not fail; a thread left without it must not go back to
			// running the supervisor's other work.
			panic("deputy: taking the supervisor's capabilities back: " + err.Error())
		}
		runtime.UnlockOSThread()
	}()
	f()
	return true
}
