// Package cgroups gives one sandbox run its own cgroup: memory, pids and cpu
// limits for the whole process tree, a way to kill the whole tree at once, and
// the figures (peak memory, CPU used, OOM kills, pids.max hits) that say how
// the run ended.
//
// One interface, three hosts: a unified cgroup v2 hierarchy; a hybrid host
// (v2 for placement, tracking and cgroup.kill, v1 controllers for the limits);
// a v1-only host (v1 controllers, the v1 freezer for the kill).
//
// Use: Detect once per process; New per run (limits set, nothing inside
// yet); start the child with clone3 CLONE_INTO_CGROUP on CloneIntoFD (when
// it is not -1) and have it write "0" to every JoinFDs fd before its exec;
// on timeout Kill then WaitEmpty; Stats for the report; Remove at the end.
// CleanupStale at start-up (or from a guardian) removes what supervisors
// killed with SIGKILL left behind. The package writes cgroupfs directly (no
// containerd/cgroups: its package init alone broke the start-up budget) and
// does no work at package init.
package cgroups

import (
	"context"
	"time"
)

// Mode is the cgroup layout of a host.
type Mode string

// Host layouts.
const (
	Unified     Mode = "unified"     // cgroup v2 only
	Hybrid      Mode = "hybrid"      // v1 controllers plus a v2 hierarchy (usually /sys/fs/cgroup/unified)
	Legacy      Mode = "legacy"      // v1 only
	Unavailable Mode = "unavailable" // no cgroup filesystem mounted
)

// Limits are the limits for one sandbox's whole tree. Zero means none.
type Limits struct {
	MemoryBytes uint64
	Pids        uint32
	// CPUQuotaCores sets cpu.max (v2) or cpu.cfs_quota_us (v1) to this many
	// CPUs' worth of time per period; 0 sets no bandwidth limit.
	CPUQuotaCores float64
	// CPUAccounting asks for the tree's CPU time in Stats (the caller
	// enforces a CPU budget with it): New fails where nothing counts it
	// (a legacy host without cpuacct).
	CPUAccounting bool
}

// Stats are the figures of a group, read at any time.
type Stats struct {
	// CPUUsage is user+system CPU time of every process that ever ran in the
	// group, as far as the host can tell (cpu.stat or cpuacct.usage).
	CPUUsage  time.Duration
	CPUUser   time.Duration
	CPUSystem time.Duration
	// MemoryPeakBytes is the group's peak memory use, 0 when unknown.
	MemoryPeakBytes uint64
	// PidsPeak is the highest number of tasks seen, 0 when unknown.
	PidsPeak uint64
	// OOMKills counts processes the kernel killed for the memory limit.
	OOMKills uint64
	// PidsLimitHits counts forks refused by pids.max.
	PidsLimitHits uint64
}

// Group is one sandbox's cgroup (on a hybrid or v1 host: its set of cgroups,
// one per hierarchy it needed). A Group is not safe for concurrent use except
// where a method says so.
type Group interface {
	// Mode is the host layout this group was made for.
	Mode() Mode
	// Path is the group's main path (the v2 directory where there is one),
	// for reports.
	Path() string
	// CloneIntoFD returns an O_PATH|O_DIRECTORY fd of the v2 cgroup directory
	// for clone3's CLONE_INTO_CGROUP, or -1 when the host has no usable v2
	// hierarchy. The Group owns the fd.
	CloneIntoFD() int
	// JoinFDs returns write-only fds of v1 tasks files. The child, a single
	// thread then, writes "0" to each of them before it execs, which moves
	// it into those cgroups before it can run or fork anything. The Group
	// owns the fds; they are close-on-exec.
	JoinFDs() []int
	// Stats reads the current figures. Safe for concurrent use.
	Stats() (Stats, error)
	// Kill ends every process in the group (cgroup.kill on v2; on v1 freeze,
	// SIGKILL every task, thaw) and returns without waiting.
	Kill() error
	// WaitEmpty returns when no process is left in the group (cgroup.events
	// "populated 0" on v2; an empty cgroup.procs on v1), or ctx's error.
	WaitEmpty(ctx context.Context) error
	// OOMKilled returns a channel that is closed once the kernel has
	// OOM-killed a process of the group: the group's oom_kill count
	// (memory.oom_control on v1, added up over the group's child cgroups;
	// memory.events on v2) went above 0. A
	// process stalled at the limit, or an OOM that found no victim, does
	// not count. On v1 the kernel kills only the process it picked, and a
	// parent that waits for it runs on: end the group (Kill) when the
	// channel is closed. On v2 memory.oom.group has killed the whole group
	// already; the channel is closed there too.
	//
	// The first call sets the watch up (v1: an eventfd registered in
	// cgroup.event_control for memory.oom_control; v2: an inotify watch on
	// memory.events) with one goroutine parked in the runtime poller; New
	// does none of it. Later calls return the same channel. A kill counted
	// before the call closes the channel at once. The channel is nil (never
	// ready) when the group has no memory controller (no memory limit on a
	// hybrid or v1 host). Remove ends the watch: a channel not closed by
	// then never is. An error (a kernel before 4.13, which counts no OOM
	// kills; a removed group) leaves the group as it was. Safe for
	// concurrent use.
	OOMKilled() (<-chan struct{}, error)
	// Remove removes every cgroup directory this Group created. It fails if a
	// process is still inside. Idempotent.
	Remove() error
	// Cleanup describes, as plain paths, how to end the group without this
	// process: for a guardian that outlives a supervisor killed with
	// SIGKILL.
	Cleanup() Cleanup
}

// Cleanup is what a process with no other knowledge does to end a group:
// write "1" to KillFile (cgroup.kill) when there is one, SIGKILL every pid
// listed in ProcsFiles until they are empty, then rmdir Dirs in order.
type Cleanup struct {
	KillFile   string
	ProcsFiles []string
	Dirs       []string
}

// Options choose where a Group goes.
type Options struct {
	// Parent is the cgroup under which the group is made, as a path inside
	// the hierarchy ("/sandboxes" or "/user.slice/.../app.scope"); empty picks
	// the host default (see New). On hybrid and v1 hosts the same path is
	// used in every hierarchy the group needs. Missing directories are
	// created, and removed with the group when they are then empty.
	Parent string
	// Name is the group's directory name; empty generates a unique one with
	// the prefix NamePrefix.
	Name string
	// MoveSelf lets New move the calling process into a leaf of its own
	// cgroup (SupervisorLeaf) when that cgroup must enable controllers for
	// the group and cannot while it holds a process (cgroup2's
	// no-internal-processes rule). The caller decides: a process that is
	// the helper alone may be moved; a library's host process may not, and
	// New then fails with the advice to give the supervisor a cgroup of its
	// own.
	MoveSelf bool
}

// NamePrefix starts the name of every cgroup this package creates, so stale
// ones can be found (and removed) after a supervisor was killed.
const NamePrefix = "sandbox-executable-"
