package cgroups

import (
	"errors"
	"math"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// RecipeDir is one directory of a run's group as New would make it, for a
// maker that is not this package (the spawn stage's runner): <Parent>/<name>
// with a fresh name per run, then Writes in order.
type RecipeDir struct {
	Parent string
	// Require lists the controllers Parent's cgroup.subtree_control must
	// enable already: the maker only checks (New enables them; a host where
	// they are not yet is New's).
	Require []string
	Writes  []RecipeWrite
	// V2 is the cgroup2 directory: the child is born into it
	// (CLONE_INTO_CGROUP) and cgroup.kill ends the tree.
	V2 bool
	// Join is a v1 directory the child joins by writing "0" to its tasks.
	Join bool
	// Memory holds the memory limit: where an OOM kill is watched; Pids
	// the pids limit: where a refused fork is counted; CPUAcct (v1) counts
	// the tree's CPU time (cpuacct.usage). A V2 directory counts it in
	// cpu.stat.
	Memory, Pids, CPUAcct bool
}

// RecipeWrite is a limit write: File in the directory gets Value.
// MayMiss skips a missing file; SwapAccount skips it unless the host has
// swap in use (and then the maker must not go on).
type RecipeWrite struct {
	File, Value          string
	MayMiss, SwapAccount bool
}

// ErrNoRecipe says the group cannot be described as plain directories and
// writes: New must make it (an explicit parent whose directories may be
// missing, a move of this process, a host without a usable layout).
var ErrNoRecipe = errors.New("cgroups: this placement needs New")

// Ready makes h ready for a run's group with lim and opt, as New would:
// the parents exist (an explicit one is made, and stays), and the
// controllers the limits need are enabled down to them (this process moves
// into a leaf of its own where the no-internal-processes rule asks it and
// opt.MoveSelf allows). It returns the directories and writes a maker (the
// spawn stage's runner) then makes each run's group from, as Recipe
// describes them; nothing of a run's own is made. made are the explicit
// parent's directories it had to make, deepest first (the run removes them
// when they are empty again). A host where that cannot be done gives an
// *UnavailableError.
func Ready(h *Host, lim Limits, opt Options) (dirs []RecipeDir, made []string, err error) {
	if math.IsNaN(lim.CPUQuotaCores) || math.IsInf(lim.CPUQuotaCores, 0) || lim.CPUQuotaCores < 0 {
		return nil, nil, errors.New("cgroups: invalid CPUQuotaCores")
	}
	if h == nil || h.Mode == Unavailable {
		return nil, nil, &UnavailableError{Mode: Unavailable, Missing: "a mounted cgroup filesystem (none in /proc/self/mountinfo)",
			Hint: "mount cgroup2 on /sys/fs/cgroup, or run where one is mounted"}
	}
	p, err := route(h, lim)
	if err != nil {
		return nil, nil, err
	}
	if h.V2 != nil {
		m, err := readyV2(h, opt, p.v2ctrls)
		made = append(made, m...)
		if err != nil {
			return nil, made, err
		}
	}
	for _, n := range p.v1 {
		pl, err := PlaceV1(n.hier, opt.Parent)
		if err != nil {
			return nil, made, err
		}
		if pl.Explicit {
			m, err := mkdirAll(n.hier.Mount, pl.Parent)
			made = append(made, m...)
			if err != nil {
				return nil, made, permError(h, pl.Parent, err, AdvisePrivilege)
			}
		}
	}
	if dirs, err = recipeDirs(h, lim, opt, p); err != nil {
		return nil, made, err
	}
	// The runner makes each run's group in these parents: one it may not
	// write is a host where no group can be had, as New would find.
	for _, d := range dirs {
		if err := unix.Access(d.Parent, unix.W_OK|unix.X_OK); err != nil {
			return nil, made, permError(h, d.Parent, &os.PathError{Op: "access", Path: d.Parent, Err: err}, AdvisePrivilege)
		}
	}
	return dirs, made, nil
}

// readyV2 makes the cgroup2 parent of a run's group and enables ctrls in
// it, as createV2 does before it makes the group.
func readyV2(h *Host, opt Options, ctrls []string) (made []string, err error) {
	pl, err := PlaceV2(h.V2, opt.Parent, os.Geteuid())
	if err != nil {
		return nil, err
	}
	advice := AdvisePrivilege
	if pl.Delegated {
		advice = AdviseDelegate
	}
	if pl.Explicit {
		if made, err = mkdirAll(pl.Top, pl.Parent); err != nil {
			return made, permError(h, pl.Parent, err, AdvisePrivilege)
		}
	}
	if pl.Shared {
		if err := mkdir(pl.Parent); err != nil && !errors.Is(err, unix.EEXIST) {
			return made, permError(h, pl.Parent, err, advice)
		}
	}
	if err := enableControllers(h.V2, pl.Top, pl.Parent, ctrls, h.Mode, opt.MoveSelf); err != nil {
		return made, permError(h, pl.Parent, err, advice)
	}
	return made, nil
}

// recipeDirs lists the directories of a group routed by p.
func recipeDirs(h *Host, lim Limits, opt Options, p plan) ([]RecipeDir, error) {
	var out []RecipeDir
	if h.V2 != nil {
		pl, err := PlaceV2(h.V2, opt.Parent, os.Geteuid())
		if err != nil {
			return nil, err
		}
		d := RecipeDir{Parent: pl.Parent, V2: true, Require: p.v2ctrls}
		for _, w := range v2Writes(lim, p.v2ctrls) {
			d.Writes = append(d.Writes, recipeWrite(w))
		}
		d.Memory = contains(p.v2ctrls, "memory")
		d.Pids = contains(p.v2ctrls, "pids")
		out = append(out, d)
	}
	for _, n := range p.v1 {
		pl, err := PlaceV1(n.hier, opt.Parent)
		if err != nil {
			return nil, err
		}
		d := RecipeDir{Parent: pl.Parent, Join: true, Memory: contains(n.ctrls, "memory"), Pids: contains(n.ctrls, "pids"),
			CPUAcct: contains(n.hier.Controllers, "cpuacct")}
		for _, w := range v1Writes(lim, n.ctrls) {
			d.Writes = append(d.Writes, recipeWrite(w))
		}
		out = append(out, d)
	}
	return out, nil
}

func recipeWrite(w limitWrite) RecipeWrite {
	return RecipeWrite{File: w.file, Value: w.value, MayMiss: w.missing == mayMiss, SwapAccount: w.missing == swapAccount}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Attach returns the group named name that a maker made from Recipe(h,
// lim, opt): the same directories, now this Group's to watch, kill and
// remove. It makes and opens nothing (CloneIntoFD is -1, JoinFDs empty:
// the child is running).
func Attach(h *Host, lim Limits, opt Options, name string) (Group, error) {
	if !validName(name) || !strings.HasPrefix(name, NamePrefix) {
		return nil, errors.New("cgroups: invalid group name " + name)
	}
	if h == nil || h.Mode == Unavailable {
		return nil, ErrNoRecipe
	}
	p, err := route(h, lim)
	if err != nil {
		return nil, err
	}
	dirs, err := recipeDirs(h, lim, opt, p)
	if err != nil {
		return nil, err
	}
	g := &group{mode: h.Mode}
	i := 0
	if h.V2 != nil {
		path := dirs[0].Parent + "/" + name
		g.v2 = &v2Dir{path: path, fd: -1}
		i = 1
	}
	for _, n := range p.v1 {
		d := &v1Dir{path: dirs[i].Parent + "/" + name, hier: n.hier, ctrls: n.ctrls}
		i++
		g.v1 = append(g.v1, d)
		g.answersFor(d)
	}
	return g, nil
}
