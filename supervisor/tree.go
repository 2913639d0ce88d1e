package supervisor

import (
	"golang.org/x/sys/unix"

	"sandbox-executable/procfs"
)

// descendants returns every live descendant of root, read from /proc. As a
// child subreaper the supervisor inherits every orphan of the sandbox, so
// its descendants are exactly the sandbox's processes.
func descendants(root int) []int { return procfs.Descendants(root) }

// signalAll sends sig to every pid, ignoring processes that are already gone.
func signalAll(pids []int, sig unix.Signal) {
	for _, p := range pids {
		_ = unix.Kill(p, sig)
	}
}
