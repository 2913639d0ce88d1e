package cgroups

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// v1Dir is a group's directory in one v1 hierarchy (co-mounted controllers
// such as "cpu,cpuacct" share one).
type v1Dir struct {
	path  string
	hier  *Hierarchy
	ctrls []string // the controllers whose limits were set here
}

// v1Memory reads memory.max_usage_in_bytes and the oom_kill count of
// memory.oom_control (4.13+) into st.
func v1Memory(dir string, st *Stats) error {
	var err error
	if st.MemoryPeakBytes, err = readUintIfExists(dir + "/memory.max_usage_in_bytes"); err != nil {
		return err
	}
	st.OOMKills, _, err = readKey(dir+"/memory.oom_control", "oom_kill")
	return err
}

// v1Pids reads pids.peak (where the kernel has it) and pids.events into st.
func v1Pids(dir string, st *Stats) error { return v2Pids(dir, st) } // same files

// userHZ is the unit of cpuacct.stat (USER_HZ, 100 on every Linux ABI).
const userHZ = 100

// v1CPU reads cpuacct.usage (ns) and the user/system split into st:
// cpuacct.usage_user/usage_sys (ns, 4.16+), else cpuacct.stat (USER_HZ
// ticks).
func v1CPU(dir string, st *Stats) error {
	u, err := readUint(dir + "/cpuacct.usage")
	if err != nil {
		return err
	}
	st.CPUUsage = nsec(u)
	us, uerr := readUint(dir + "/cpuacct.usage_user")
	sy, serr := readUint(dir + "/cpuacct.usage_sys")
	if uerr == nil && serr == nil {
		st.CPUUser, st.CPUSystem = nsec(us), nsec(sy)
		return nil
	}
	b, err := readFile(dir + "/cpuacct.stat")
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	ut, _ := keyValue(string(b), "user")
	stk, _ := keyValue(string(b), "system")
	st.CPUUser = ticks(ut)
	st.CPUSystem = ticks(stk)
	return nil
}

func nsec(v uint64) time.Duration {
	if v > 1<<63-1 {
		return 1<<63 - 1
	}
	return time.Duration(v)
}

func ticks(v uint64) time.Duration { return usec(v * (1000000 / userHZ)) }
