// Package fsdeps records what a decision read from the filesystem, so that
// the decision can be replayed later only while everything it read is still
// as it was.
//
// The code that decides a run (from the process's start to the end of
// supervisor.Prepare) reads the filesystem through this package's calls
// instead of os, path/filepath and x/sys/unix: each call is made, and the
// call with its result is added to a process-global list (Deps). Encode
// turns that list into the binary format of spawn/deps.h, which the C
// verifier (spawn's se_deps_check) checks by making each call again before
// the Go runtime starts. A dependency holds when the call gives the same
// answer: the same errno when it failed, otherwise the same facts, as listed
// per Kind.
//
// The results are restricted to what is checked: an Info has the mode,
// device, inode, owner and rdev of a file, but no size and no times, since a
// Stat's check does not cover them. A caller that needs more reads through a
// call whose check covers it (ReadNoFollow gives a regular file's size, which
// its check compares).
//
// Some reads cannot be checked that way: a file of this process's own in
// /proc (ReadProcSelf: allowed only for facts the recipe's key covers), a
// pipe, the password database through NSS. Taint marks the decision as not
// replayable, with why; Tainted lists the reasons.
//
// Deps is meant to be taken once the decision is complete (after
// supervisor.Prepare): what is recorded later, by run-time code that shares
// a function with the decision (mountns.Claim deciding the view again under
// its claims), is not part of it.
package fsdeps

import (
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Kind is the call a dependency records.
type Kind uint8

// The calls, as the C verifier makes them again (see spawn/deps.h).
const (
	// KindLstat is lstat(2): the errno, else mode (type and permission
	// bits), dev, ino, uid, gid and rdev (and the ctime with FlagCtime).
	KindLstat Kind = 1
	// KindStat is stat(2), compared as KindLstat.
	KindStat Kind = 2
	// KindReadlink is readlink(2): the errno, else the target.
	KindReadlink Kind = 3
	// KindReadDir is a directory's listing: the errno of opening it, else
	// the directory's dev, ino and mtime, which every entry created,
	// removed or renamed in it changes (checked with one stat(2)).
	KindReadDir Kind = 4
	// KindFileMeta is a regular file of a real filesystem read whole (or
	// up to a bound): the errno of opening it, else its dev, ino, size,
	// mtime and ctime (any write changes the ctime). FlagNoFollow: the
	// last component was not followed (lstat(2) checks it).
	KindFileMeta Kind = 5
	// KindFileContent is a file of /proc, /sys or another kernel
	// filesystem, whose metadata says nothing of its content: the errno
	// of opening it, else the content, byte for byte.
	KindFileContent Kind = 6
	// KindStatfs is statfs(2): the errno, else f_type.
	KindStatfs Kind = 7
)

var kindNames = map[Kind]string{KindLstat: "lstat", KindStat: "stat", KindReadlink: "readlink", KindReadDir: "readdir",
	KindFileMeta: "read (metadata)", KindFileContent: "read (content)", KindStatfs: "statfs"}

// String names the call ("lstat").
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Flags refine a Kind.
const (
	// FlagNoFollow: a file read (KindFileMeta, KindFileContent) opened
	// with O_NOFOLLOW.
	FlagNoFollow uint8 = 1
	// FlagCtime: a KindLstat whose check compares the ctime too.
	FlagCtime uint8 = 2
)

// Timespec is a file time.
type Timespec struct{ Sec, Nsec int64 }

func timespec(t unix.Timespec) Timespec { return Timespec{Sec: t.Sec, Nsec: t.Nsec} }

// Dep is one recorded call and its result. Only the fields its Kind names
// are meaningful; the others are zero.
type Dep struct {
	Kind  Kind
	Flags uint8
	// Path is the path as the call was given it (relative paths are
	// relative to the working directory, which the recipe's key holds).
	Path string
	// Errno is the call's error, 0 when it succeeded (the fields below
	// are then its result).
	Errno unix.Errno
	// Stat results (KindLstat, KindStat): the full st_mode.
	Mode     uint32
	UID, GID uint32
	Rdev     uint64
	// Dev and Ino: KindLstat, KindStat, KindReadDir, KindFileMeta.
	Dev, Ino uint64
	// Size: KindFileMeta.
	Size int64
	// Mtime: KindReadDir, KindFileMeta; Ctime: KindFileMeta, and
	// KindLstat with FlagCtime.
	Mtime, Ctime Timespec
	// Data is the target (KindReadlink) or the content (KindFileContent).
	Data string
	// FsType is statfs's f_type (KindStatfs).
	FsType int64
}

// call is what identifies the call of a Dep, whatever its result: its
// kind and flags in two bytes, then its path. Built by hand: in a fresh
// process fmt took 0.2 ms over a decision's calls.
func (d *Dep) call() string {
	b := make([]byte, 0, 2+len(d.Path))
	b = append(b, byte(d.Kind), d.Flags)
	return string(append(b, d.Path...))
}

// String is the call and, when it failed, its errno ("lstat /x: ENOENT").
func (d *Dep) String() string {
	s := d.Kind.String() + " " + d.Path
	if d.Errno != 0 {
		return s + ": " + unix.ErrnoName(d.Errno)
	}
	return s
}

// The process-global record.
var rec struct {
	sync.Mutex
	deps     []Dep
	exact    map[string]bool // encoded deps already in deps
	answers  map[string]int  // call -> index of its first answer in deps
	taints   []string
	procSelf []string
	// Since Begin: each call's answer in this decision (encoded), and
	// the calls that gave two.
	round    map[string]string
	unstable []string
	// generation counts the Resets: a Memo's value is of one.
	generation uint64
}

// Begin starts a decision's round: Unstable then lists the lstat, stat and
// readlink calls that gave two answers since. A decision made while the filesystem changed under it
// may not be what it saw at any one time; the caller decides again.
func Begin() {
	rec.Lock()
	defer rec.Unlock()
	rec.round, rec.unstable = map[string]string{}, nil
}

// Unstable lists, as "lstat of /x", the calls that gave two answers since
// Begin.
func Unstable() []string {
	rec.Lock()
	defer rec.Unlock()
	return append([]string(nil), rec.unstable...)
}

// record adds d, unless the same call gave the same answer before. The
// same call with another answer means the filesystem changed while the
// decision was made: both are kept (the C check fails on one of them), and
// the decision is tainted.
func record(d Dep) {
	enc := string(encodeDep(nil, &d))
	rec.Lock()
	defer rec.Unlock()
	// A listing that changed only narrows what the decision grants (an
	// entry made meanwhile gets no rule); what a path is (its identity,
	// its type, a link's target) must be one thing.
	c := d.call()
	if rec.round != nil && (d.Kind == KindLstat || d.Kind == KindStat || d.Kind == KindReadlink) {
		if prev, ok := rec.round[c]; !ok {
			rec.round[c] = enc
		} else if prev != enc && !slices.Contains(rec.unstable, d.Kind.String()+" of "+d.Path) {
			rec.unstable = append(rec.unstable, d.Kind.String()+" of "+d.Path)
		}
	}
	if rec.exact[enc] {
		return
	}
	if rec.exact == nil {
		rec.exact, rec.answers = map[string]bool{}, map[string]int{}
	}
	rec.exact[enc] = true
	if _, ok := rec.answers[c]; ok {
		rec.taints = append(rec.taints, "fsdeps: "+d.Kind.String()+" of "+d.Path+" gave two answers while deciding")
	} else {
		rec.answers[c] = len(rec.deps)
	}
	rec.deps = append(rec.deps, d)
}

// Deps returns the dependencies recorded so far, in the order they were
// first made, each call with the same answer once.
func Deps() []Dep {
	rec.Lock()
	defer rec.Unlock()
	return append([]Dep(nil), rec.deps...)
}

// Taint marks the decision as not replayable: it read something no
// recorded dependency can check. reason says what, for a report.
func Taint(reason string) {
	rec.Lock()
	defer rec.Unlock()
	rec.taints = append(rec.taints, reason)
}

// Tainted returns the reasons given to Taint (and the ones this package
// found itself), nil when the decision can be replayed.
func Tainted() []string {
	rec.Lock()
	defer rec.Unlock()
	return append([]string(nil), rec.taints...)
}

// ProcSelfReads returns the reasons given to ReadProcSelf and
// ReadlinkProcSelf so far, with the path read: what the decision took from
// this process's own /proc files, which the recipe's key must cover.
func ProcSelfReads() []string {
	rec.Lock()
	defer rec.Unlock()
	return append([]string(nil), rec.procSelf...)
}

// Reset forgets everything recorded, and every Memo's value: the next
// decision in this process records all it reads. The resident decider
// (sandbox-executable decider) resets before each decision it makes.
func Reset() {
	rec.Lock()
	defer rec.Unlock()
	rec.deps, rec.exact, rec.answers, rec.taints, rec.procSelf = nil, nil, nil, nil, nil
	rec.round, rec.unstable = nil, nil
	rec.generation++
}

// A Memo keeps a value computed from what a decision read (through this
// package, which records it) for the rest of the decision, until Reset: a
// later decision in the same process computes it again, and so records
// again what it reads. A cache of anything read from the host that outlived
// the record would leave the next decision's entry without a dependency on
// it. The zero Memo is ready for use.
type Memo[T any] struct {
	mu         sync.Mutex
	generation uint64
	set        bool
	v          T
}

// Get returns the value f computed in this decision, calling f if there is
// none yet.
func (m *Memo[T]) Get(f func() T) T {
	rec.Lock()
	g := rec.generation
	rec.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.set || m.generation != g {
		m.v, m.set, m.generation = f(), true, g
	}
	return m.v
}

func noteProcSelf(path, why string) {
	rec.Lock()
	defer rec.Unlock()
	rec.procSelf = append(rec.procSelf, path+": "+why)
}
