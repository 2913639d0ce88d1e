// Package rlimit turns a Plan's limits into the resource limits the spawn
// stage sets in the child with prlimit.
//
// Resource limits are per process: RLIMIT_CPU stops one process that burns
// its CPU seconds, not a tree that shares them, and RLIMIT_FSIZE caps the
// size of each file written, not the disk used in all. The whole-tree limits
// (memory, pids, the CPU budget) belong to the cgroups package; this package
// provides rlimit stand-ins for them only when the caller asks (no cgroup
// could be made and degradation was allowed), with their weaknesses written
// next to them.
package rlimit

import (
	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
)

// Infinity is RLIM_INFINITY.
const Infinity = ^uint64(0)

// Limit is one resource limit.
type Limit struct {
	Resource int
	Name     string
	Cur      uint64
	Max      uint64
	// Why says what it stands for.
	Why string
}

// maxSaneNofile caps an inherited soft RLIMIT_NOFILE: some hosts hand out a
// billion, and programs that close or poll every possible fd then crawl.
const maxSaneNofile = 1 << 20

// Options are the inputs besides the Plan's limits.
type Options struct {
	// Nofile is RLIMIT_NOFILE as the helper was started with (before the Go
	// runtime raised it): the program gets it back.
	NofileCur, NofileMax uint64
	// TreeFallback sets RLIMIT_DATA and RLIMIT_NPROC for the memory and pids
	// limits, for hosts where no cgroup can be made.
	TreeFallback bool
	// Root says the program runs as uid 0, to which the kernel never
	// applies RLIMIT_NPROC: the fallback then leaves it out.
	Root bool
}

// For returns the limits for l, in a fixed order.
func For(l policy.Limits, o Options) []Limit {
	out := []Limit{{Resource: unix.RLIMIT_CORE, Name: "RLIMIT_CORE", Cur: 0, Max: 0,
		Why: "no core dumps: a dump of a process that read secrets would carry them into the workspace"}}
	if l.CPUSeconds > 0 {
		// SIGXCPU at the soft limit, which a program may catch to clean up,
		// SIGKILL one second later.
		out = append(out, Limit{Resource: unix.RLIMIT_CPU, Name: "RLIMIT_CPU", Cur: l.CPUSeconds, Max: l.CPUSeconds + 1,
			Why: "cpu_time_secs, per process (the whole tree's budget is the cgroup's)"})
	}
	if l.FileSizeBytes > 0 {
		out = append(out, Limit{Resource: unix.RLIMIT_FSIZE, Name: "RLIMIT_FSIZE", Cur: l.FileSizeBytes, Max: l.FileSizeBytes,
			Why: "max_disk_mb, as the largest size of any one file written: the kernel has no per-sandbox disk quota"})
	}
	if o.NofileCur != 0 || o.NofileMax != 0 {
		cur := o.NofileCur
		if cur > maxSaneNofile {
			cur = maxSaneNofile
		}
		if cur > o.NofileMax {
			cur = o.NofileMax
		}
		out = append(out, Limit{Resource: unix.RLIMIT_NOFILE, Name: "RLIMIT_NOFILE", Cur: cur, Max: o.NofileMax,
			Why: "the limit the helper was started with (the Go runtime raises its own)"})
	}
	if o.TreeFallback {
		if l.MemoryBytes > 0 {
			// Not RLIMIT_AS: V8 and the Go runtime reserve gigabytes of
			// address space they never touch, and die at start under it.
			// RLIMIT_DATA counts only private writable mappings (4.7+), what
			// a process really allocates.
			out = append(out, Limit{Resource: unix.RLIMIT_DATA, Name: "RLIMIT_DATA", Cur: l.MemoryBytes, Max: l.MemoryBytes,
				Why: "max_memory_mb without a cgroup: caps each process's private writable memory (heap, anonymous mappings), not the tree's; shared memory and page cache are not counted"})
		}
		if l.Pids > 0 && !o.Root {
			out = append(out, Limit{Resource: unix.RLIMIT_NPROC, Name: "RLIMIT_NPROC", Cur: uint64(l.Pids), Max: uint64(l.Pids),
				Why: "max_pids without a cgroup: counts every process of the user, inside and outside the sandbox, and does not apply to root"})
		}
	}
	return out
}
