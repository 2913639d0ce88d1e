// Package procfs reads the few /proc files the helper needs, in one place:
// the fields of /proc/<pid>/stat (state, parent, start time) and, from
// them, the descendants of a process.
package procfs

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// Stat is what the helper reads of /proc/<pid>/stat.
type Stat struct {
	// State is field 3: 'R', 'S', 'D', 'Z', 'X', ...
	State byte
	// PPID is field 4, the parent's pid.
	PPID int
	// StartTime is field 22, clock ticks after boot: with the pid it names
	// one process (a reused pid has another start time).
	StartTime uint64
}

// ErrMalformed is returned for a stat text that does not have the fields.
var ErrMalformed = errors.New("procfs: malformed /proc/<pid>/stat")

// ReadStat reads /proc/<pid>/stat. A process that is gone gives an error
// that errors.Is reports as ENOENT (or ESRCH).
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// ParseStat parses a /proc/<pid>/stat text. The command name (field 2) may
// hold spaces and parentheses, so fields are counted after its last ')'.
func ParseStat(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, ErrMalformed
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, ErrMalformed
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return Stat{}, ErrMalformed
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return Stat{}, ErrMalformed
	}
	return Stat{State: f[0][0], PPID: ppid, StartTime: start}, nil
}

// Descendants returns every live descendant of root, read from /proc,
// breadth first. A process that exits meanwhile is left out.
func Descendants(root int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	children := make(map[int][]int)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if st, err := ReadStat(pid); err == nil {
			children[st.PPID] = append(children[st.PPID], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
