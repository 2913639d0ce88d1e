package cgroups

// group is the one Group implementation: a run's group as the runner made
// it (Attach), for its figures: a v2 directory where the host has a cgroup2
// hierarchy plus one v1 directory per v1 hierarchy a limit needed (hybrid
// and legacy hosts). Which part answers what is decided here, once; the
// file formats live in v2.go and v1.go.
type group struct {
	mode Mode
	v2   *v2Dir
	v1   []*v1Dir
	// Where each figure is read on v1 (nil: not on v1 for this group).
	mem, pids, cpuacct, freezer *v1Dir
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
