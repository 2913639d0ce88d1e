package spawn

/*
#include <stdlib.h>
#include "stage.h"
*/
import "C"

import (
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Guardian is a small process that outlives the supervisor if the
// supervisor is killed with SIGKILL, and then cleans up after it: it ends
// the sandbox's cgroup (writes cgroup.kill, SIGKILLs whatever the
// cgroup.procs files still list, removes the directories), waits until the
// program's child (the init of its PID namespace) is gone, and only then
// removes the run's placeholders (those of each lock it can take
// exclusively, each only while it is still the directory recorded) and its
// private temp dir, with whatever the program left in it. It holds the run's locks meanwhile (the same open
// file descriptions as the supervisor), so the claims outlast the program.
// It starts in microseconds (one clone; it shares the supervisor's memory,
// on a stack of its own that is never unmapped), leaves the caller's process
// group so that a group kill does not take it along, and exits as soon as
// Release tells it the run ended cleanly. It is the caller's child, but a
// "clone" child without an exit signal: wait4 without __WALL or __WCLONE
// never waits for it, so a subreaper that reaps until it has no child left
// is not kept waiting by it (the supervisor's reaper waits that way).
type Guardian struct {
	Pid int
	w   int
	g   *C.struct_se_guard
}

// GuardianSpec is what a guardian cleans up.
type GuardianSpec struct {
	// KillFile is the cgroup's cgroup.kill, or ""; Procs its cgroup.procs
	// files; CgroupDirs its directories, deepest first.
	KillFile   string
	Procs      []string
	CgroupDirs []string
	// Locks are flock locks the run holds shared, each with the
	// placeholders removed when it can be taken exclusively.
	Locks []GuardedLock
	// TempDirs are directories to remove with everything in them (the
	// private temp dir), through descriptors the guardian holds.
	TempDirs []TempDir
	// KeepFDs are more descriptors the guardian holds until it ends,
	// besides the Locks' and the TempDirs'.
	KeepFDs []int
	// SweepRequest is a file the guardian makes after cleaning up, once it
	// holds nothing any more: it asks the next run to sweep for what could
	// not be removed. "" for none.
	SweepRequest string
	// Timings are how long the guardian tries and waits; zero fields take
	// DefaultGuardianTimings'.
	Timings GuardianTimings
}

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

// TempDir is a directory removed with everything in it (see RemoveTempDir):
// FD is the directory, open (the guardian holds it: on the private temp
// dir, the run's lock), Record is removed once the directory is gone (or
// "").
type TempDir struct {
	Path, Record string
	FD           int
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

// GuardedLock is an open flock lock and the placeholders it guards.
type GuardedLock struct {
	FD           int
	Placeholders []GuardedDir
}

// GuardedDir is a placeholder: the empty directory at Path, recorded at
// Record, removed only while it is still the directory with that device,
// inode and ctime (a directory someone wrote into, chmodded or replaced is
// no longer one).
type GuardedDir struct {
	Path, Record string
	Dev, Ino     uint64
	Ctime        unix.Timespec
}

// Matches reports whether st (an lstat) is the recorded directory.
func (d GuardedDir) Matches(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Dev == d.Dev && st.Ino == d.Ino && st.Ctim == d.Ctime
}

// guardianStack is the guardian's stack: it calls nothing deep.
const guardianStack = 32 << 10

// StartGuardian starts a guardian for spec.
func StartGuardian(spec GuardianSpec) (*Guardian, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("guardian: pipe: %w", err)
	}
	keep := guardianKeeps(p[0], spec)
	// Everything the guardian reads goes into one mapping it owns.
	size := guardianSize(spec, len(keep))
	base := C.se_guard_alloc(C.size_t(size))
	if base == nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, fmt.Errorf("guardian: out of memory")
	}
	m := &guardMem{mem: unsafe.Slice((*byte)(base), size), off: guardianStack}
	g := (*C.struct_se_guard)(m.take(int(C.sizeof_struct_se_guard)))
	g.pipe_fd = C.int(p[0])
	t := spec.Timings.orDefaults()
	g.kill_rounds = C.int(t.KillRounds)
	g.kill_interval_ms = C.int(t.KillInterval.Milliseconds())
	g.child_wait_ms = C.int(t.ChildWait.Milliseconds())
	g.ready_wait_ms = C.int(t.ReadyWait.Milliseconds())
	g.clone_fallback = 1 // it is born into no cgroup: the legacy clone serves where clone3 is missing
	m.fillCleanup(g, spec)
	ks := unsafe.Slice((*C.int)(m.take(len(keep)*int(unsafe.Sizeof(C.int(0))))), len(keep))
	for i, fd := range keep {
		ks[i] = C.int(fd)
	}
	g.keep_fds = &ks[0]
	g.nkeep = C.int(len(keep))
	m.fillLocks(g, spec.Locks)

	reapReleased()
	pid := C.se_guardian(g, base, guardianStack)
	unix.Close(p[0])
	if pid < 0 {
		unix.Close(p[1])
		return nil, fmt.Errorf("guardian: clone: %w", unix.Errno(-pid))
	}
	return &Guardian{Pid: int(pid), w: p[1], g: g}, nil
}

// guardianKeeps are the descriptors the guardian holds: its pipe, the
// spec's own and the locks'.
func guardianKeeps(pipe int, spec GuardianSpec) []int {
	keep := append([]int{pipe}, spec.KeepFDs...)
	for _, l := range spec.Locks {
		keep = append(keep, l.FD)
	}
	for _, d := range spec.TempDirs {
		keep = append(keep, d.FD)
	}
	slices.Sort(keep)
	return slices.Compact(keep)
}

// guardianStrings are the strings the guardian reads, and how many
// placeholders there are.
func guardianStrings(spec GuardianSpec) (strs []string, nph int) {
	strs = append(append([]string{spec.KillFile, spec.SweepRequest}, spec.Procs...), spec.CgroupDirs...)
	for _, d := range spec.TempDirs {
		strs = append(strs, d.Path, d.Record)
	}
	for _, l := range spec.Locks {
		for _, d := range l.Placeholders {
			strs = append(strs, d.Path, d.Record)
			nph++
		}
	}
	return strs, nph
}

// guardianSize is the size of the guardian's mapping: its stack, its
// struct, the lists, the strings and their alignment, in whole pages.
func guardianSize(spec GuardianSpec, nkeep int) int {
	strs, nph := guardianStrings(spec)
	size := guardianStack + int(C.sizeof_struct_se_guard) + 16*len(strs) + 8*nkeep + 64
	size += len(spec.Locks)*(int(C.sizeof_struct_se_guard_lock)+8) + nph*(int(C.sizeof_struct_se_guard_ph)+8)
	if len(spec.TempDirs) > 0 {
		size += len(spec.TempDirs)*(int(C.sizeof_struct_se_guard_tmp)+8) + C.SE_RM_DEPTH*int(C.sizeof_struct_se_rm_level) + 8
	}
	for _, s := range strs {
		size += len(s) + 1 + 8
	}
	return (size + 4095) &^ 4095
}

// guardMem hands out the guardian's mapping piece by piece, aligned.
type guardMem struct {
	mem []byte
	off int
}

func (m *guardMem) take(n int) unsafe.Pointer {
	m.off = (m.off + 7) &^ 7
	if m.off+n > len(m.mem) {
		panic("spawn: guardian mapping too small") // guardianSize is wrong
	}
	ptr := unsafe.Pointer(&m.mem[m.off])
	m.off += n
	return ptr
}

func (m *guardMem) str(s string) *C.char {
	ptr := m.take(len(s) + 1)
	copy(unsafe.Slice((*byte)(ptr), len(s)+1), s+"\x00")
	return (*C.char)(ptr)
}

func (m *guardMem) list(ss []string) **C.char {
	if len(ss) == 0 {
		return nil
	}
	arr := unsafe.Slice((**C.char)(m.take(len(ss)*int(unsafe.Sizeof((*C.char)(nil))))), len(ss))
	for i, s := range ss {
		arr[i] = m.str(s)
	}
	return &arr[0]
}

// fillCleanup gives g what it kills and removes: the cgroup's kill file,
// procs files and directories, the temp dirs and the sweep request.
func (m *guardMem) fillCleanup(g *C.struct_se_guard, spec GuardianSpec) {
	if spec.KillFile != "" {
		g.kill_file = m.str(spec.KillFile)
	}
	g.procs = m.list(spec.Procs)
	g.nprocs = C.int(len(spec.Procs))
	g.dirs = m.list(spec.CgroupDirs)
	g.ndirs = C.int(len(spec.CgroupDirs))
	if len(spec.TempDirs) > 0 {
		td := unsafe.Slice((*C.struct_se_guard_tmp)(m.take(len(spec.TempDirs)*int(C.sizeof_struct_se_guard_tmp))), len(spec.TempDirs))
		for i, d := range spec.TempDirs {
			td[i].path = m.str(d.Path)
			if d.Record != "" {
				td[i].record = m.str(d.Record)
			}
			td[i].fd = C.int(d.FD)
		}
		g.tmp_dirs = &td[0]
		g.ntmp_dirs = C.int(len(spec.TempDirs))
		g.rm_levels = (*C.struct_se_rm_level)(m.take(C.SE_RM_DEPTH * int(C.sizeof_struct_se_rm_level)))
	}
	if spec.SweepRequest != "" {
		g.sweep_request = m.str(spec.SweepRequest)
	}
}

// fillLocks gives g the locks it holds and the placeholders each guards.
func (m *guardMem) fillLocks(g *C.struct_se_guard, ls []GuardedLock) {
	if len(ls) == 0 {
		return
	}
	locks := unsafe.Slice((*C.struct_se_guard_lock)(m.take(len(ls)*int(C.sizeof_struct_se_guard_lock))), len(ls))
	for i, l := range ls {
		locks[i].fd = C.int(l.FD)
		if len(l.Placeholders) == 0 {
			continue
		}
		phs := unsafe.Slice((*C.struct_se_guard_ph)(m.take(len(l.Placeholders)*int(C.sizeof_struct_se_guard_ph))), len(l.Placeholders))
		for j, d := range l.Placeholders {
			phs[j].path = m.str(d.Path)
			phs[j].record = m.str(d.Record)
			phs[j].dev = C.uint64_t(d.Dev)
			phs[j].ino = C.uint64_t(d.Ino)
			phs[j].ctime_sec = C.int64_t(d.Ctime.Sec)
			phs[j].ctime_nsec = C.int64_t(d.Ctime.Nsec)
		}
		locks[i].ph = &phs[0]
		locks[i].nph = C.int(len(l.Placeholders))
	}
	g.locks = &locks[0]
	g.nlocks = C.int(len(ls))
}

// setChild sets the pid of the child the guardian waits for, as the
// kernel does when Start clones it (tests).
func (g *Guardian) setChild(pid int) { g.g.child_pid = C.int(pid) }

// child is the pid of the child the guardian waits for, or 0 (tests).
func (g *Guardian) child() int { return int(g.g.child_pid) }

// Release tells the guardian the run ended cleanly; it exits at once. It
// returns once the guardian holds none of the caller's fds (its stdio
// included) any more, which it gives up microseconds after its start.
func (g *Guardian) Release() {
	if g == nil || g.w < 0 {
		return
	}
	g.waitReady()
	_, _ = unix.Write(g.w, []byte{'D'})
	unix.Close(g.w)
	g.w = -1
	released.Lock()
	released.pids = append(released.pids, g.Pid)
	released.Unlock()
	reapReleased()
}

// waitReady waits, Timings.ReadyWait at most, until the guardian holds
// only its pipe and what it keeps, and reports whether it does.
func (g *Guardian) waitReady() bool { return C.se_guard_wait_ready(g.g) != 0 }

// released are the guardians told to exit and not yet reaped: a process
// that starts many (tests, a long-lived caller of the supervisor) reaps
// them as it goes, without waiting for any.
var released struct {
	sync.Mutex
	pids []int
}

func reapReleased() {
	released.Lock()
	defer released.Unlock()
	left := released.pids[:0]
	for _, pid := range released.pids {
		var st unix.WaitStatus
		if got, err := unix.Wait4(pid, &st, unix.WNOHANG|unix.WALL, nil); err == nil && got == 0 {
			left = append(left, pid) // still running
		}
	}
	released.pids = left
}
