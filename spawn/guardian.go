package spawn

/*
#include <stdlib.h>
#include "stage.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The guardian (stage.c's se_guard_main, started by the runner) is a small
// process that outlives the helper if the helper is killed with SIGKILL,
// and then cleans up after it: it ends the sandbox's cgroup, waits until
// the program's init is gone, and only then removes the run's placeholders
// (those of each lock it can take exclusively, each only while it is still
// the directory recorded) and its private temp dir, with whatever the
// program left in it. Go decides how patient it is.

// GuardianTimings are the guardian's patience.
type GuardianTimings struct {
	// KillRounds is how many times at most the guardian SIGKILLs what the
	// cgroup.procs files list, KillInterval apart, until they list
	// nothing; should they still list something, it removes nothing but
	// the cgroup directories it can.
	KillRounds   int
	KillInterval time.Duration
	// ChildWait is how long it waits for the supervisor's child (the
	// init) to be gone before it removes the placeholders.
	ChildWait time.Duration
	// ReadyWait is how long Release waits for the guardian to hold only
	// its own fds.
	ReadyWait time.Duration
}

// DefaultGuardianTimings: ten seconds for the tree to die and as long for
// the init, one second to let go of the caller's fds.
var DefaultGuardianTimings = GuardianTimings{
	KillRounds:   500,
	KillInterval: 20 * time.Millisecond,
	ChildWait:    10 * time.Second,
	ReadyWait:    time.Second,
}

// orDefaults fills the zero fields of t from DefaultGuardianTimings.
func (t GuardianTimings) orDefaults() GuardianTimings {
	d := DefaultGuardianTimings
	if t.KillRounds == 0 {
		t.KillRounds = d.KillRounds
	}
	if t.KillInterval == 0 {
		t.KillInterval = d.KillInterval
	}
	if t.ChildWait == 0 {
		t.ChildWait = d.ChildWait
	}
	if t.ReadyWait == 0 {
		t.ReadyWait = d.ReadyWait
	}
	return t
}

// RemoveTempDir removes everything in the directory open at fd, path, never
// by a path (a link in it is removed, not followed; a mount in it is left
// alone; a directory the program took write permission off is made 0700),
// then the directory itself while path still names it, then record (when
// not ""). The one implementation of removing a private temp dir: the
// guardian's, in C, which the run's own cleanup and the sweep use too.
func RemoveTempDir(path string, fd int, record string) error {
	levels := make([]C.struct_se_rm_level, C.SE_RM_DEPTH)
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var cr *C.char
	if record != "" {
		cr = C.CString(record)
		defer C.free(unsafe.Pointer(cr))
	}
	if r := C.se_remove_tmp(cp, C.int(fd), cr, &levels[0]); r < 0 {
		return fmt.Errorf("remove %s: %w", path, unix.Errno(-r))
	}
	return nil
}

// KillCgroup ends the processes of a cgroup as the runner and its guardian
// end a run's (stage.c's se_kill_tree): "1" written to killFile (cgroup.kill,
// or "" for none), then SIGKILL to every pid the procs files list, in rounds,
// until they list none. It reports whether they were seen empty. For the
// sweep of groups whose helper and guardian both died.
func KillCgroup(killFile string, procs []string) bool {
	t := DefaultGuardianTimings
	var g C.struct_se_guard
	var cstrs []*C.char
	defer func() {
		for _, p := range cstrs {
			C.free(unsafe.Pointer(p))
		}
	}()
	str := func(s string) *C.char {
		p := C.CString(s)
		cstrs = append(cstrs, p)
		return p
	}
	if killFile != "" {
		g.kill_file = str(killFile)
	}
	list := make([]*C.char, len(procs)+1)
	for i, p := range procs {
		list[i] = str(p)
	}
	lp := (**C.char)(C.malloc(C.size_t(len(list)) * C.size_t(unsafe.Sizeof(list[0]))))
	defer C.free(unsafe.Pointer(lp))
	copy(unsafe.Slice(lp, len(list)), list)
	g.procs = lp
	g.nprocs = C.int(len(procs))
	g.kill_rounds = C.int(t.KillRounds)
	g.kill_interval_ms = C.int(t.KillInterval.Milliseconds())
	return C.se_kill_tree(&g, 0) != 0
}
