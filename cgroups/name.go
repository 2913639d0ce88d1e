package cgroups

import (
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Generated names are NamePrefix + "<pid>-<start>-<random>": the supervisor's
// pid, its start time (field 22 of /proc/<pid>/stat, clock ticks since boot,
// so a reused pid is not taken for the supervisor) and 48 random bits in hex
// so the groups of one supervisor differ. "<pid>-<random>" (no start time) is
// parsed too.

// supervisorLeaf is the cgroup a delegated supervisor moves itself into so
// that its own cgroup may enable controllers (see New). It carries the
// prefix but no pid, so CleanupStale never takes it for a sandbox.
const supervisorLeaf = NamePrefix + "supervisor"

var self struct {
	once  sync.Once
	pid   int
	start uint64
}

// selfID returns this process's pid and start time, read once.
func selfID() (int, uint64) {
	self.once.Do(func() {
		self.pid = os.Getpid()
		self.start, _ = procStart(self.pid) // 0 when unreadable: name without it
	})
	return self.pid, self.start
}

// newName makes a fresh group name for this process.
func newName() string {
	pid, start := selfID()
	return formatName(pid, start, rand.Uint64()&(1<<48-1))
}

func formatName(pid int, start, random uint64) string {
	b := make([]byte, 0, 64)
	b = append(b, NamePrefix...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, '-')
	if start != 0 {
		b = strconv.AppendUint(b, start, 10)
		b = append(b, '-')
	}
	h := strconv.FormatUint(random, 16)
	for i := len(h); i < 12; i++ {
		b = append(b, '0')
	}
	b = append(b, h...)
	return string(b)
}

// parseName takes a group name apart; ok is false for names this package
// did not generate. start is 0 when the name has no start time.
func parseName(name string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(name, NamePrefix)
	if !found {
		return 0, 0, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 2 && len(f) != 3 {
		return 0, 0, false
	}
	p, err := strconv.Atoi(f[0])
	if err != nil || p <= 0 || f[0][0] == '+' {
		return 0, 0, false
	}
	if len(f) == 3 {
		if start, err = strconv.ParseUint(f[1], 10, 64); err != nil || start == 0 {
			return 0, 0, false
		}
	}
	last := f[len(f)-1]
	if last == "" {
		return 0, 0, false
	}
	if _, err := strconv.ParseUint(last, 16, 64); err != nil {
		return 0, 0, false
	}
	return p, start, true
}

// procStart reads the start time of pid (clock ticks after boot).
func procStart(pid int) (uint64, error) {
	_, start, err := procStat(pid)
	return start, err
}

// procStat reads the state letter and the start time of pid.
func procStat(pid int) (byte, uint64, error) {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseStat(string(b))
}

// parseStat extracts field 3 (state) and field 22 (starttime) of a
// /proc/<pid>/stat text. The command name (field 2) may hold spaces and
// parentheses, so fields are counted after the last ')'.
func parseStat(stat string) (byte, uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errBadStat
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, errBadStat
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, errBadStat
	}
	return f[0][0], start, nil
}

var errBadStat = errors.New("cgroups: malformed /proc/<pid>/stat")
