package cgroups

import (
	"errors"
	"strconv"
	"strings"
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

// setV1Limits writes the limits of the controllers in ctrls (see v1Writes).
func setV1Limits(dir string, lim Limits, ctrls []string) error {
	return applyWrites(dir, v1Writes(lim, ctrls))
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

// freezeKill ends every process in the freezer cgroup dir: freeze, SIGKILL
// each task, thaw. If the freeze does not settle (a task in uninterruptible
// sleep), the round is repeated a few times so nothing forked meanwhile
// escapes.
func freezeKill(dir string) error {
	state := dir + "/freezer.state"
	for round := 0; round < 3; round++ {
		if err := writeFile(state, "FROZEN"); err != nil {
			return err
		}
		frozen := false
		for i := 0; i < 50; i++ {
			b, err := readFile(state)
			if err != nil {
				return err
			}
			if strings.TrimSpace(string(b)) == "FROZEN" {
				frozen = true
				break
			}
			time.Sleep(time.Millisecond)
		}
		kerr := killOnce([]string{dir})
		if err := writeFile(state, "THAWED"); err != nil {
			return errors.Join(kerr, err)
		}
		if kerr != nil || frozen {
			return kerr
		}
	}
	return nil
}

// killOnce sends SIGKILL to every process listed in dirs and their child
// cgroups.
func killOnce(dirs []string) error {
	for _, d := range dirs {
		pids, err := treePids(d)
		if err != nil {
			return err
		}
		for _, p := range pids {
			if err := unix.Kill(p, unix.SIGKILL); err != nil && err != unix.ESRCH {
				return pathErr("kill pid "+strconv.Itoa(p)+" in", d, err)
			}
		}
	}
	return nil
}

// killTree sends SIGKILL to every process in dirs; with frozen set one round
// is enough, otherwise it repeats until the cgroups are empty, for at most
// killLoopLimit (processes may fork while the first ones die).
func killTree(dirs []string, frozen bool) error {
	if frozen {
		return killOnce(dirs)
	}
	deadline := time.Now().Add(killLoopLimit)
	for {
		if err := killOnce(dirs); err != nil {
			return err
		}
		n := 0
		for _, d := range dirs {
			p, err := treePids(d)
			if err != nil {
				return err
			}
			n += len(p)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("cgroups: kill " + strings.Join(dirs, " ") + ": " + strconv.Itoa(n) + " processes still there after " + killLoopLimit.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// killLoopLimit bounds the SIGKILL loop used without a freezer.
const killLoopLimit = 2 * time.Second
