package cgroups

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// group is the one Group implementation: a v2 directory where the host has
// a cgroup2 hierarchy (placement, tracking, kill, CPU figures, and the limits
// on a unified host) plus one v1 directory per v1 hierarchy a limit needs
// (hybrid and legacy hosts), plus a freezer and cpuacct directory on a
// legacy host. Which part answers what is decided here, once; the file
// formats live in v2.go and v1.go.
type group struct {
	mode Mode
	v2   *v2Dir
	v1   []*v1Dir
	// Where each figure is read on v1 (nil: not on v1 for this group).
	mem, pids, cpuacct, freezer *v1Dir

	joinFDs []int
	// made are parent directories New created for Options.Parent, deepest
	// first; Remove removes those that are then empty.
	made []string

	mu      sync.Mutex
	closed  bool      // fds closed
	pending []string  // group directories not removed yet
	oom     *oomWatch // made by the first OOMKilled
}

func (g *group) Mode() Mode { return g.mode }

func (g *group) Path() string {
	switch {
	case g.v2 != nil:
		return g.v2.path
	case g.freezer != nil:
		return g.freezer.path
	case len(g.v1) > 0:
		return g.v1[0].path
	}
	return ""
}

func (g *group) CloneIntoFD() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.v2 == nil || g.closed {
		return -1
	}
	return g.v2.fd
}

func (g *group) JoinFDs() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	return slices.Clone(g.joinFDs)
}

// Stats reads CPU from v2 cpu.stat where there is a v2 directory (it has
// cpu.stat without the cpu controller), else from cpuacct; memory and pids
// from the v1 directories where the limits were set there, else from v2.
func (g *group) Stats() (Stats, error) {
	var st Stats
	var err error
	switch {
	case g.v2 != nil:
		err = v2CPU(g.v2.path, &st)
	case g.cpuacct != nil:
		err = v1CPU(g.cpuacct.path, &st)
	}
	if err != nil {
		return st, err
	}
	switch {
	case g.mem != nil:
		err = v1Memory(g.mem.path, &st)
	case g.v2 != nil:
		err = v2Memory(g.v2.path, &st)
	}
	if err != nil {
		return st, err
	}
	switch {
	case g.pids != nil:
		err = v1Pids(g.pids.path, &st)
	case g.v2 != nil:
		err = v2Pids(g.v2.path, &st)
	}
	return st, err
}

// Kill uses the v2 directory where there is one: every process of the group
// is in it, whatever v1 groups it also joined. After a Kill, start nothing
// new in the group: on 6.12+ kernels a cgroup that has seen cgroup.kill
// kills every later CLONE_INTO_CGROUP child at birth. On a v1 host without
// a freezer hierarchy nothing stops forks while the tasks are signalled, so
// there Kill repeats SIGKILL until the group is empty (2 s at most) and so
// does wait.
func (g *group) Kill() error {
	ctx, cancel := context.WithTimeoutCause(context.Background(), killLoopLimit, errors.New("after "+killLoopLimit.String()))
	defer cancel()
	return g.killSet().kill(ctx)
}

// killSet is how the group's processes are ended: through the v2 directory
// where there is one (every process of the group is in it), else the
// freezer's, else every v1 directory's task lists.
func (g *group) killSet() killSet {
	switch {
	case g.v2 != nil:
		return killSet{v2: []string{g.v2.path}}
	case g.freezer != nil:
		return killSet{freezer: []string{g.freezer.path}}
	}
	p := make([]string, len(g.v1))
	for i, d := range g.v1 {
		p[i] = d.path
	}
	return killSet{listed: p}
}

func (g *group) WaitEmpty(ctx context.Context) error {
	return g.killSet().waitEmpty(ctx)
}

// Remove closes the fds and ends the OOM watch, removes the group
// directories (child cgroups a nested supervisor left first) and then the
// parents New created that are now empty. A directory that still holds a
// process stays, with a *BusyError; a later Remove tries again.
func (g *group) Remove() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	if !g.closed {
		g.closed = true
		if g.v2 != nil && g.v2.fd >= 0 {
			unix.Close(g.v2.fd)
			g.v2.fd = -1
		}
		for _, fd := range g.joinFDs {
			unix.Close(fd)
		}
		g.joinFDs = nil
		if g.oom != nil {
			g.oom.close()
		}
	}
	left := g.pending[:0]
	for _, d := range g.pending {
		if err := removeTree(d); err != nil {
			errs = append(errs, err)
			left = append(left, d)
		}
	}
	g.pending = left
	if len(left) == 0 {
		for _, d := range g.made {
			// Shared with other groups (EBUSY), or gone: both fine.
			if err := unix.Rmdir(d); err != nil && err != unix.EBUSY && err != unix.ENOTEMPTY && err != unix.ENOENT {
				errs = append(errs, pathErr("remove", d, err))
			}
		}
		g.made = nil
	}
	return errors.Join(errs...)
}

// Cleanup lists the group's kill file, its cgroup.procs files and its
// directories, deepest first (a nested child left by the program is not
// listed: the guardian's rmdir of its parent then fails, and CleanupStale
// takes over).
func (g *group) Cleanup() Cleanup {
	g.mu.Lock()
	defer g.mu.Unlock()
	var c Cleanup
	if g.v2 != nil {
		if _, err := os.Stat(g.v2.path + "/cgroup.kill"); err == nil {
			c.KillFile = g.v2.path + "/cgroup.kill"
		}
		c.ProcsFiles = append(c.ProcsFiles, g.v2.path+"/cgroup.procs")
	}
	for _, d := range g.v1 {
		c.ProcsFiles = append(c.ProcsFiles, d.path+"/cgroup.procs")
	}
	c.Dirs = append(c.Dirs, g.pending...)
	c.Dirs = append(c.Dirs, g.made...)
	return c
}
