package policy

import (
	"math"
	"strconv"
	"time"
)

// pidMaxLimit is the kernel's PID_MAX_LIMIT: no pid namespace or cgroup can
// ever hold more tasks, so a larger max_pids can never be reached.
const pidMaxLimit = 4194304

// Bounds of the limits, beyond which a value cannot be represented.
const (
	maxMegabytes   = math.MaxInt64 >> 20 // largest MB count whose bytes fit in int64
	maxCPUSeconds  = 1<<62 - 1
	maxTimeoutSecs = uint64(math.MaxInt64 / int64(time.Second))
)

// resourceLimits fills Plan.Limits from the effective resource limits.
func (r *resolver) resourceLimits() error {
	in := r.in.Limits
	lim := &r.plan.Limits
	var err error
	if lim.MemoryBytes, err = r.megabytes(in.MaxMemoryMB, "max_memory_mb"); err != nil {
		return err
	}
	if lim.FileSizeBytes, err = r.megabytes(in.MaxDiskMB, "max_disk_mb"); err != nil {
		return err
	}
	lim.Pids = in.MaxPids
	if in.MaxPids > pidMaxLimit {
		lim.Pids = 0
		r.note("max_pids " + strconv.FormatUint(uint64(in.MaxPids), 10) + " is above the kernel's PID_MAX_LIMIT (" +
			strconv.Itoa(pidMaxLimit) + ") and can never be reached, so no pids limit is set.")
	}
	if in.CPUTimeSecs > maxCPUSeconds {
		return r.limits.err("cpu_time_secs", strconv.FormatUint(in.CPUTimeSecs, 10)+" seconds is too large (at most "+strconv.FormatUint(maxCPUSeconds, 10)+")")
	}
	lim.CPUSeconds = in.CPUTimeSecs
	switch {
	case in.TimeoutSecs == 0:
		lim.TimeoutSeconds = DefaultTimeoutSecs
		lim.TimeoutRule = "timeout_secs 0 means the default, 300 s"
	case in.TimeoutSecs > maxTimeoutSecs:
		return r.limits.err("timeout_secs", strconv.FormatUint(in.TimeoutSecs, 10)+" seconds is too large (at most "+strconv.FormatUint(maxTimeoutSecs, 10)+")")
	default:
		lim.TimeoutSeconds = in.TimeoutSecs
		lim.TimeoutRule = "timeout_secs " + strconv.FormatUint(in.TimeoutSecs, 10)
	}
	return nil
}

// megabytes converts a MB count to bytes, refusing counts whose byte value
// does not fit in an int64.
func (r *resolver) megabytes(mb uint64, name string) (uint64, error) {
	if mb > maxMegabytes {
		return 0, r.limits.err(name, strconv.FormatUint(mb, 10)+" MB does not fit in a 64-bit byte count (at most "+strconv.FormatUint(maxMegabytes, 10)+" MB)")
	}
	return mb << 20, nil
}
