package cgroups

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"sandbox-executable/procfs"
)

// Generated names are NamePrefix + "<pid>-<start>-<pidns>-<random>": the
// supervisor's pid, its start time (field 22 of /proc/<pid>/stat, clock
// ticks since boot, so a reused pid is not taken for the supervisor), the
// inode of its pid namespace (a pid means something only there: a
// supervisor in a container sharing the cgroup tree must not be judged by
// our /proc) and 48 random bits in hex so the groups of one supervisor
// differ. "<pid>-<start>-<random>" and "<pid>-<random>" (older names) are
// parsed too.

// SupervisorLeaf is the name of the cgroup a delegated supervisor moves
// itself into so that its own cgroup may enable controllers (see New). It
// carries the prefix but no pid, so CleanupStale never takes it for a
// sandbox.
const SupervisorLeaf = NamePrefix + "supervisor"

var self struct {
	once  sync.Once
	pid   int
	start uint64
	pidNS uint64
}

// selfID returns this process's pid, start time and pid namespace, read
// once.
func selfID() (int, uint64, uint64) {
	self.once.Do(func() {
		self.pid = os.Getpid()
		self.start, _ = procStart(self.pid) // 0 when unreadable: name without it
		self.pidNS = pidNamespace()
	})
	return self.pid, self.start, self.pidNS
}

// pidNamespace is the inode of this process's pid namespace, or 0.
func pidNamespace() uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/pid", &st) != nil {
		return 0
	}
	return st.Ino
}

// groupName is a parsed group name.
type groupName struct {
	pid   int
	start uint64 // 0: not recorded
	pidNS uint64 // 0: not recorded
}

// parseName takes a group name apart; ok is false for names this package
// did not generate.
func parseName(name string) (n groupName, ok bool) {
	rest, found := strings.CutPrefix(name, NamePrefix)
	if !found {
		return n, false
	}
	f := strings.Split(rest, "-")
	if len(f) < 2 || len(f) > 4 {
		return n, false
	}
	p, err := strconv.Atoi(f[0])
	if err != nil || p <= 0 || f[0][0] == '+' {
		return n, false
	}
	n.pid = p
	if len(f) >= 3 {
		if n.start, err = strconv.ParseUint(f[1], 10, 64); err != nil || n.start == 0 {
			return groupName{}, false
		}
	}
	if len(f) == 4 {
		if n.pidNS, err = strconv.ParseUint(f[2], 10, 64); err != nil || n.pidNS == 0 {
			return groupName{}, false
		}
	}
	last := f[len(f)-1]
	if last == "" {
		return groupName{}, false
	}
	if _, err := strconv.ParseUint(last, 16, 64); err != nil {
		return groupName{}, false
	}
	return n, true
}

// procStart reads the start time of pid (clock ticks after boot).
func procStart(pid int) (uint64, error) {
	st, err := procfs.ReadStat(pid)
	return st.StartTime, err
}
