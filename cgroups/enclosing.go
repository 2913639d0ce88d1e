package cgroups

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Enclosing are the limits that the cgroups this process is in already put
// on everything in them: a container's own cgroup, limited by its engine
// (docker run --memory, --pids-limit), or a systemd unit's. They bound every
// process a run starts, however it is set up: where the run's own group
// cannot be made, a limit of the policy they already meet is enforced by
// them (the program may get less than it asked, never more). Only cgroup2
// is read; 0 means no such limit.
type Enclosing struct {
	// MemoryBytes is the tightest memory.max on the way up, counted only
	// where swap cannot carry memory past it (no swap in use, or a
	// memory.swap.max of 0 at or above it).
	MemoryBytes uint64
	// Pids is the tightest pids.max on the way up. (A limit of 0 is
	// counted as 1: at least as tight for every use made of it here.)
	Pids uint64
	// MemoryAt and PidsAt are the cgroup directories that set them.
	MemoryAt, PidsAt string
}

// EnclosingLimits reads the limits of this process's cgroup2 and of each
// ancestor mounted here, up to the mount's root.
func EnclosingLimits(h *Host) Enclosing {
	var e Enclosing
	if h == nil || h.V2 == nil {
		return e
	}
	dir, err := OwnDir(h.V2)
	if err != nil {
		return e
	}
	top := filepath.Clean(h.V2.Mount)
	swapCapped := !swapOn()
	var memory uint64
	var memoryAt string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if v, ok := readLimit(d + "/memory.max"); ok && (memoryAt == "" || v < memory) {
			memory, memoryAt = max(v, 1), d
		}
		if v, ok := readLimit(d + "/memory.swap.max"); ok && v == 0 {
			swapCapped = true
		}
		if v, ok := readLimit(d + "/pids.max"); ok && (e.PidsAt == "" || v < e.Pids) {
			e.Pids, e.PidsAt = max(v, 1), d
		}
		if d == top || len(d) <= len(top) {
			break
		}
	}
	if swapCapped {
		e.MemoryBytes, e.MemoryAt = memory, memoryAt
	}
	return e
}

// readLimit reads a limit file: a number, or "max" (no limit: ok false).
func readLimit(path string) (uint64, bool) {
	b, err := readFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}
