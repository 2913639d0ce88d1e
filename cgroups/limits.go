package cgroups

import "strconv"

// The limits as data: which file of a group's directory gets which value,
// per cgroup version. Pure, so the mapping is tested without a cgroupfs;
// applyWrites carries it out.

// ifMissing says what a write does when its file does not exist.
type ifMissing int

const (
	mustExist   ifMissing = iota // a missing file is an error
	mayMiss                      // skipped: a kernel or setup without the knob
	swapAccount                  // skipped unless the host has swap in use (then errNoSwapLimit)
)

// limitWrite is one file write that sets a limit.
type limitWrite struct {
	file    string // name inside the group's directory
	value   string
	missing ifMissing
}

// v2Writes are the cgroup2 writes for the limits of the controllers in
// ctrls, in order.
func v2Writes(lim Limits, ctrls []string) []limitWrite {
	var w []limitWrite
	for _, c := range ctrls {
		switch c {
		case "memory":
			w = append(w,
				limitWrite{"memory.max", strconv.FormatUint(lim.MemoryBytes, 10), mustExist},
				// No swap escape, and an OOM kill takes the whole tree.
				limitWrite{"memory.swap.max", "0", swapAccount},
				limitWrite{"memory.oom.group", "1", mayMiss})
		case "pids":
			w = append(w, limitWrite{"pids.max", strconv.FormatUint(uint64(lim.Pids), 10), mustExist})
		case "cpu":
			w = append(w, limitWrite{"cpu.max", cpuMax(lim.CPUQuotaCores), mustExist})
		}
	}
	return w
}

// v1Writes are the v1 writes for the limits of the controllers in ctrls
// (each in its own hierarchy's directory, all of them in dir when
// co-mounted), in order.
func v1Writes(lim Limits, ctrls []string) []limitWrite {
	var w []limitWrite
	for _, c := range ctrls {
		switch c {
		case "memory":
			v := strconv.FormatUint(lim.MemoryBytes, 10)
			w = append(w,
				limitWrite{"memory.limit_in_bytes", v, mustExist},
				// memory+swap to the same value: no escape into swap. The
				// file exists only with swap accounting.
				limitWrite{"memory.memsw.limit_in_bytes", v, swapAccount})
		case "pids":
			w = append(w, limitWrite{"pids.max", strconv.FormatUint(uint64(lim.Pids), 10), mustExist})
		case "cpu":
			w = append(w,
				limitWrite{"cpu.cfs_period_us", strconv.Itoa(cpuPeriodUs), mustExist},
				limitWrite{"cpu.cfs_quota_us", strconv.FormatUint(cpuQuotaUs(lim.CPUQuotaCores, cpuPeriodUs), 10), mustExist})
		}
	}
	return w
}
