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

// Group is one run's cgroup as the runner made it (on a hybrid or v1 host:
// its set of cgroups, one per hierarchy it needed), attached for its
// figures (Attach).
type Group interface {
	// Mode is the host layout this group was made for.
	Mode() Mode
	// Path is the group's main path (the v2 directory where there is one),
	// for reports.
	Path() string
	// Stats reads the current figures. Safe for concurrent use.
	Stats() (Stats, error)
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
// ones can be found (and removed) after a supervisor was killed (the runner
// names them: spawn.CgroupStale reads them).
const NamePrefix = "sandbox-executable-"

// SupervisorLeaf is the name of the cgroup a delegated supervisor moves
// itself into so that its own cgroup may enable controllers (see New). It
// carries the prefix but no pid, so CleanupStale never takes it for a
// sandbox.
const SupervisorLeaf = NamePrefix + "supervisor"
