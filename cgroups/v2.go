package cgroups

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// v2Dir is a group's directory in the cgroup2 hierarchy: placement (clone3
// CLONE_INTO_CGROUP), tracking (cgroup.events), the kill (cgroup.kill), CPU
// figures (cpu.stat, present without the cpu controller) and, on a unified
// host, the limits.
type v2Dir struct {
	path string
	fd   int // O_PATH|O_DIRECTORY|O_CLOEXEC, -1 when closed
}

// cpuPeriodUs is the CFS period used for CPU quotas (the kernel default).
const cpuPeriodUs = 100000

// cpuQuotaUs turns a number of CPUs into a quota per period, at least the
// 1 ms the kernel accepts.
func cpuQuotaUs(cores float64, periodUs uint64) uint64 {
	q := math.Ceil(cores * float64(periodUs))
	if q < 1000 {
		return 1000
	}
	if q > float64(math.MaxInt64/1000) {
		return math.MaxInt64 / 1000
	}
	return uint64(q)
}

// cpuMax is the cpu.max line for cores CPUs.
func cpuMax(cores float64) string {
	return strconv.FormatUint(cpuQuotaUs(cores, cpuPeriodUs), 10) + " " + strconv.Itoa(cpuPeriodUs)
}

// enableControllers makes ctrls available in dir's children: it enables them
// in dir's cgroup.subtree_control and, where dir itself lacks them, in its
// ancestors up to top (never above). A cgroup that has processes cannot
// enable controllers (no-internal-processes rule); when that cgroup is this
// process's own and moveSelf allows it, the process moves itself into a
// leaf child first (see moveSelfToLeaf).
func enableControllers(hier *Hierarchy, top, dir string, ctrls []string, mode Mode, moveSelf bool) error {
	if len(ctrls) == 0 {
		return nil
	}
	if en, err := readList(dir + "/cgroup.subtree_control"); err == nil && containsAll(en, ctrls) {
		return nil
	}
	chain := []string{dir}
	for cur := dir; ; {
		avail, err := readList(cur + "/cgroup.controllers")
		if err != nil {
			return err
		}
		if containsAll(avail, ctrls) {
			break
		}
		if cur == top || len(cur) <= len(top) {
			return &UnavailableError{
				Mode:    mode,
				Missing: "the " + strings.Join(missingFrom(avail, ctrls), ", ") + " controller(s) in " + cur + " (cgroup.controllers: " + strings.Join(avail, " ") + ")",
				Hint:    "enable them in the parent's cgroup.subtree_control, or delegate them to this cgroup (systemd: Delegate=yes)",
			}
		}
		cur = filepath.Dir(cur)
		chain = append(chain, cur)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if err := enableIn(hier, chain[i], ctrls, mode, moveSelf); err != nil {
			return err
		}
	}
	return nil
}

// enableIn enables ctrls in dir's cgroup.subtree_control.
func enableIn(hier *Hierarchy, dir string, ctrls []string, mode Mode, moveSelf bool) error {
	en, err := readList(dir + "/cgroup.subtree_control")
	if err != nil {
		return err
	}
	miss := missingFrom(en, ctrls)
	if len(miss) == 0 {
		return nil
	}
	line := "+" + strings.Join(miss, " +")
	err = writeFile(dir+"/cgroup.subtree_control", line)
	if !errors.Is(err, unix.EBUSY) {
		return err
	}
	// dir has processes of its own. If one of them is this process, and
	// the caller lets it be moved, move it into a leaf and try again.
	if moveSelf && ownV2Dir(hier, dir) {
		if merr := moveSelfToLeaf(dir); merr != nil {
			return merr
		}
		if err = writeFile(dir+"/cgroup.subtree_control", line); !errors.Is(err, unix.EBUSY) {
			return err
		}
	}
	pids, _ := readPids(dir + "/cgroup.procs")
	return &UnavailableError{
		Mode:    mode,
		Missing: "a cgroup without processes of its own to enable " + strings.Join(miss, ", ") + " in: " + dir + " holds processes " + fmtPids(pids) + " (no-internal-processes rule)",
		Advice:  AdviseAlone,
		Err:     err,
	}
}

func fmtPids(pids []int) string {
	s := make([]string, 0, len(pids))
	for i, p := range pids {
		if i == 8 {
			s = append(s, "...")
			break
		}
		s = append(s, strconv.Itoa(p))
	}
	return strings.Join(s, " ")
}

// ownV2Dir reports whether dir is this process's current cgroup2 directory.
// It reads /proc/self/cgroup again since the process may have moved.
func ownV2Dir(hier *Hierarchy, dir string) bool {
	b, err := readFile("/proc/self/cgroup")
	if err != nil {
		return false
	}
	for _, pc := range parseProcCgroup(string(b)) {
		if pc.id == 0 && len(pc.controllers) == 0 {
			d, err := hier.Dir(pc.path)
			return err == nil && d == dir
		}
	}
	return false
}

// moveSelfToLeaf moves this process (all its threads) from dir into
// dir/<SupervisorLeaf>, creating it if needed, so that dir may enable
// controllers for its children. Only this process is moved: other processes
// in dir are not ours to move.
func moveSelfToLeaf(dir string) error {
	leaf := dir + "/" + SupervisorLeaf
	if err := mkdir(leaf); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return writeFile(leaf+"/cgroup.procs", strconv.Itoa(os.Getpid()))
}

// v2CPU reads usage_usec, user_usec and system_usec of cpu.stat into st.
func v2CPU(dir string, st *Stats) error {
	b, err := readFile(dir + "/cpu.stat")
	if err != nil {
		return err
	}
	t := string(b)
	u, _ := keyValue(t, "usage_usec")
	us, _ := keyValue(t, "user_usec")
	sy, _ := keyValue(t, "system_usec")
	st.CPUUsage = usec(u)
	st.CPUUser = usec(us)
	st.CPUSystem = usec(sy)
	return nil
}

func usec(v uint64) time.Duration {
	if v > math.MaxInt64/1000 {
		return math.MaxInt64
	}
	return time.Duration(v) * time.Microsecond
}

// v2Memory reads memory.peak and memory.events into st (zero where the
// files are missing: no memory controller, or memory.peak before 5.19).
func v2Memory(dir string, st *Stats) error {
	var err error
	if st.MemoryPeakBytes, err = readUintIfExists(dir + "/memory.peak"); err != nil {
		return err
	}
	st.OOMKills, _, err = readKey(dir+"/memory.events", "oom_kill")
	return err
}

// v2Pids reads pids.peak and pids.events into st.
func v2Pids(dir string, st *Stats) error {
	var err error
	if st.PidsPeak, err = readUintIfExists(dir + "/pids.peak"); err != nil {
		return err
	}
	st.PidsLimitHits, _, err = readKey(dir+"/pids.events", "max")
	return err
}
