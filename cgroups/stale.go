package cgroups

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/procfs"
)

// staleWait bounds how long CleanupStale waits for killed processes to go.
const staleWait = 2 * time.Second

// CleanupStale removes the groups that supervisors which are gone left
// behind (a supervisor killed with SIGKILL cannot remove its own). It looks
// in the default parents New uses (the cgroup2 one, and this process's own
// cgroup in each v1 hierarchy with a controller New uses) for directories
// named NamePrefix<pid>-...; a group is stale when no process has that pid,
// the process is a zombie, or (when the name records it) the process has a
// different start time, i.e. the pid was reused. Stale groups are killed
// (cgroup.kill; on v1 freeze, SIGKILL, thaw), waited for (about 2 s at most
// in all) and removed; removed lists their directories.
//
// Limits: it assumes supervisors share this process's pid namespace, and it
// finds v1 groups only under this process's own v1 cgroups (a supervisor
// that ran in another v1 cgroup left them elsewhere; on a hybrid host its
// cgroup2 group, which holds every process, is still found and killed).
// Groups created under Options.Parent or with Options.Name are not looked
// for.
func CleanupStale(h *Host) (removed []string, err error) {
	if h == nil || h.Mode == Unavailable {
		return nil, nil
	}
	var errs []error
	var v2dirs, v1dirs []string
	var freezers map[string]bool
	if h.V2 != nil {
		if pl, err := PlaceV2(h.V2, "", os.Geteuid()); err == nil {
			d, err := staleIn(pl.Parent)
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
		d, err := staleIn(pl.Parent)
		errs = append(errs, err)
		v1dirs = append(v1dirs, d...)
		if hier.Has("freezer") {
			if freezers == nil {
				freezers = map[string]bool{}
			}
			for _, x := range d {
				freezers[x] = true
			}
		}
	}
	if len(v2dirs)+len(v1dirs) == 0 {
		return nil, errors.Join(errs...)
	}

	// cgroup2 first (it holds every process on a hybrid host), then the
	// v1 freezer groups, then anything left in other v1 groups.
	k := killSet{v2: v2dirs}
	for _, d := range v1dirs {
		if freezers[d] {
			k.freezer = append(k.freezer, d)
		} else {
			k.listed = append(k.listed, d)
		}
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), staleWait, errors.New("after "+staleWait.String()))
	defer cancel()
	errs = append(errs, k.kill(ctx), k.waitEmpty(ctx))
	for _, d := range append(v1dirs, v2dirs...) {
		if rerr := removeTree(d); rerr != nil {
			errs = append(errs, rerr)
			continue
		}
		removed = append(removed, d)
	}
	return removed, errors.Join(errs...)
}

// staleIn lists the stale groups directly under parent.
func staleIn(parent string) ([]string, error) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, pathErr("list", parent, unwrapPathErr(err))
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		n, ok := parseName(e.Name())
		if !ok {
			continue
		}
		if _, _, ns := selfID(); n.pidNS != 0 && ns != 0 && n.pidNS != ns {
			continue // another pid namespace's: its pid means nothing in our /proc
		}
		if !supervisorAlive(n.pid, n.start) {
			out = append(out, parent+"/"+e.Name())
		}
	}
	return out, nil
}

// supervisorAlive reports whether the supervisor named in a group's name
// still runs: its pid exists, is not a zombie, and (when recorded) started
// at the recorded time. Unreadable /proc entries count as alive.
func supervisorAlive(pid int, start uint64) bool {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ESRCH)
	}
	if st.State == 'Z' || st.State == 'X' {
		return false
	}
	return start == 0 || st.StartTime == start
}
