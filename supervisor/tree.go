package supervisor

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// descendants returns every live descendant of root, read from /proc. As a
// child subreaper the supervisor inherits every orphan of the sandbox, so
// its descendants are exactly the sandbox's processes.
func descendants(root int) []int {
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
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
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

// parentOf reads the ppid field of /proc/PID/stat. The command name may hold
// spaces and parentheses, so fields are counted after its last ')'.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}

// signalAll sends sig to every pid, ignoring processes that are already gone.
func signalAll(pids []int, sig unix.Signal) {
	for _, p := range pids {
		_ = unix.Kill(p, sig)
	}
}
