package cgroups

import (
	"errors"
	"os"
	"slices"
)

// Sweeper is what CleanupStale asks of the runner, which names and ends a
// run's groups: whether the group name is a run's whose supervisor is gone,
// and how a group's processes are ended.
type Sweeper struct {
	Stale func(name string) bool
	Kill  func(killFile string, procs []string) bool
}

// CleanupStale removes the groups that supervisors which are gone left
// behind (a supervisor killed with SIGKILL cannot remove its own, and its
// guardian was killed too). It looks
// in the default parents New uses (the cgroup2 one, and this process's own
// cgroup in each v1 hierarchy with a controller New uses) for directories
// named NamePrefix<pid>-...; a group is stale when no process has that pid,
// the process is a zombie, or (when the name records it) the process has a
// different start time, i.e. the pid was reused. The runner names the
// groups, and says which are stale (s.Stale, spawn.CgroupStale); stale
// groups are ended by s.Kill, the way the runner and its guardian end a
// run's (spawn.KillCgroup: cgroup.kill where there is one, then SIGKILL to
// every pid the procs files list until they list none), and removed;
// removed lists their directories.
//
// Limits: it assumes supervisors share this process's pid namespace, and it
// finds v1 groups only under this process's own v1 cgroups (a supervisor
// that ran in another v1 cgroup left them elsewhere; on a hybrid host its
// cgroup2 group, which holds every process, is still found and killed).
// Groups created under Options.Parent or with Options.Name are not looked
// for.
func CleanupStale(h *Host, s Sweeper) (removed []string, err error) {
	if h == nil || h.Mode == Unavailable {
		return nil, nil
	}
	var errs []error
	var v2dirs, v1dirs []string
	if h.V2 != nil {
		if pl, err := PlaceV2(h.V2, "", os.Geteuid()); err == nil {
			d, err := staleIn(pl.Parent, s.Stale)
			errs = append(errs, err)
			v2dirs = d
		}
	}
	for i := range h.V1 {
		hier := &h.V1[i]
		if !hier.Has("memory") && !hier.Has("pids") && !hier.Has("cpu") && !hier.Has("cpuacct") && !hier.Has("freezer") {
			continue
		}
		pl, err := PlaceV1(hier, "")
		if err != nil {
			continue
		}
		d, err := staleIn(pl.Parent, s.Stale)
		errs = append(errs, err)
		v1dirs = append(v1dirs, d...)
	}
	if len(v2dirs)+len(v1dirs) == 0 {
		return nil, errors.Join(errs...)
	}
	// Each group's cgroup2 directory first (on a hybrid host it holds
	// every process of the group), then the v1 ones.
	for _, d := range append(slices.Clone(v2dirs), v1dirs...) {
		killFile := ""
		if _, err := os.Stat(d + "/cgroup.kill"); err == nil {
			killFile = d + "/cgroup.kill"
		}
		subs, _ := subdirsAll(d)
		var procs []string
		for _, s := range append(subs, d) {
			procs = append(procs, s+"/cgroup.procs")
		}
		if !s.Kill(killFile, procs) {
			errs = append(errs, errors.New("cgroups: stale group "+d+" still holds processes"))
		}
	}
	for _, d := range append(v1dirs, v2dirs...) {
		if rerr := removeTree(d); rerr != nil {
			errs = append(errs, rerr)
			continue
		}
		removed = append(removed, d)
	}
	return removed, errors.Join(errs...)
}

// subdirsAll lists every cgroup directory beneath dir.
func subdirsAll(dir string) ([]string, error) {
	var out []string
	subs, err := subdirs(dir)
	for _, s := range subs {
		out = append(out, s)
		more, _ := subdirsAll(s)
		out = append(out, more...)
	}
	return out, err
}

// staleIn lists the stale groups directly under parent.
func staleIn(parent string, stale func(name string) bool) ([]string, error) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, pathErr("list", parent, unwrapPathErr(err))
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && stale(e.Name()) {
			out = append(out, parent+"/"+e.Name())
		}
	}
	return out, nil
}
