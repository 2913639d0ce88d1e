package spawn

/*
#include "stage.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Guardian is a small process that outlives the supervisor if the
// supervisor is killed with SIGKILL, and then ends the sandbox's cgroup: it
// writes cgroup.kill, SIGKILLs whatever the cgroup.procs files still list,
// and removes the directories. It starts in microseconds (it shares the
// supervisor's memory, on a stack of its own that is never unmapped), leaves
// the caller's process group so that a group kill does not take it along,
// and exits as soon as Release tells it the run ended cleanly. It is not the
// caller's child (an intermediate process starts it and exits), so a
// subreaper that reaps until it has no child left is not kept waiting by it.
type Guardian struct {
	Pid int
	w   int
}

// guardianStack is the guardian's stack, bootStack its intermediate's: both
// call nothing deep.
const (
	guardianStack = 32 << 10
	bootStack     = 16 << 10
)

// StartGuardian starts a guardian for a cgroup described by killFile
// (cgroup.kill, or ""), procs (cgroup.procs files) and dirs (to remove,
// deepest first).
func StartGuardian(killFile string, procs, dirs []string) (*Guardian, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("guardian: pipe: %w", err)
	}
	// Everything the guardian reads goes into one mapping it owns.
	size := guardianStack + bootStack + int(C.sizeof_struct_se_guard) + 16*(len(procs)+len(dirs)+2)
	size += len(killFile) + 1
	for _, s := range append(append([]string(nil), procs...), dirs...) {
		size += len(s) + 1
	}
	size = (size + 4095) &^ 4095
	base := C.se_guard_alloc(C.size_t(size))
	if base == nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, fmt.Errorf("guardian: out of memory")
	}
	mem := unsafe.Slice((*byte)(base), size)
	off := guardianStack + bootStack
	take := func(n int) unsafe.Pointer {
		off = (off + 7) &^ 7
		ptr := unsafe.Pointer(&mem[off])
		off += n
		return ptr
	}
	str := func(s string) *C.char {
		ptr := take(len(s) + 1)
		copy(unsafe.Slice((*byte)(ptr), len(s)+1), s+"\x00")
		return (*C.char)(ptr)
	}
	list := func(ss []string) **C.char {
		if len(ss) == 0 {
			return nil
		}
		arr := unsafe.Slice((**C.char)(take(len(ss)*int(unsafe.Sizeof((*C.char)(nil))))), len(ss))
		for i, s := range ss {
			arr[i] = str(s)
		}
		return &arr[0]
	}
	g := (*C.struct_se_guard)(take(int(C.sizeof_struct_se_guard)))
	g.pipe_fd = C.int(p[0])
	if killFile != "" {
		g.kill_file = str(killFile)
	}
	g.procs = list(procs)
	g.nprocs = C.int(len(procs))
	g.dirs = list(dirs)
	g.ndirs = C.int(len(dirs))

	// Were this process a child subreaper, the orphaned guardian would be
	// reparented right back to it.
	var sub int
	_ = unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&sub)), 0, 0, 0)
	if sub != 0 {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	var boot C.long
	pid := C.se_guardian(g, base, guardianStack, unsafe.Add(base, guardianStack), bootStack, &boot)
	unix.Close(p[0])
	if boot > 0 {
		// The intermediate has exited (the call waited for it): reap it.
		var st unix.WaitStatus
		for {
			if _, err := unix.Wait4(int(boot), &st, unix.WALL, nil); err != unix.EINTR {
				break
			}
		}
	}
	if pid < 0 {
		unix.Close(p[1])
		return nil, fmt.Errorf("guardian: clone: %w", unix.Errno(-pid))
	}
	return &Guardian{Pid: int(pid), w: p[1]}, nil
}

// Release tells the guardian the run ended cleanly; it exits at once.
func (g *Guardian) Release() {
	if g == nil || g.w < 0 {
		return
	}
	_, _ = unix.Write(g.w, []byte{'D'})
	unix.Close(g.w)
	g.w = -1
}
