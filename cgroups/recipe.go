package cgroups

import (
	"errors"
	"math"
	"os"
	"strings"
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
	// Memory holds the memory limit: where an OOM kill is watched.
	Memory bool
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

// Recipe lists the directories New would make for one group on h with lim
// and opt, and their writes, without making anything. It only describes
// the steady state of a host where New ran before: the parents exist and
// enable what the limits need. A run made from it is attached with Attach.
func Recipe(h *Host, lim Limits, opt Options) ([]RecipeDir, error) {
	if h == nil || h.Mode == Unavailable || opt.Parent != "" || opt.Name != "" {
		return nil, ErrNoRecipe
	}
	if math.IsNaN(lim.CPUQuotaCores) || math.IsInf(lim.CPUQuotaCores, 0) || lim.CPUQuotaCores < 0 {
		return nil, ErrNoRecipe
	}
	p, err := route(h, lim)
	if err != nil {
		return nil, err
	}
	var out []RecipeDir
	if h.V2 != nil {
		pl, err := PlaceV2(h.V2, "", os.Geteuid())
		if err != nil {
			return nil, err
		}
		d := RecipeDir{Parent: pl.Parent, V2: true, Require: p.v2ctrls}
		for _, w := range v2Writes(lim, p.v2ctrls) {
			d.Writes = append(d.Writes, recipeWrite(w))
		}
		d.Memory = contains(p.v2ctrls, "memory")
		out = append(out, d)
	}
	for _, n := range p.v1 {
		pl, err := PlaceV1(n.hier, "")
		if err != nil {
			return nil, err
		}
		d := RecipeDir{Parent: pl.Parent, Join: true, Memory: contains(n.ctrls, "memory")}
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
	dirs, err := Recipe(h, lim, opt)
	if err != nil {
		return nil, err
	}
	p, _ := route(h, lim)
	g := &group{mode: h.Mode}
	i := 0
	if h.V2 != nil {
		path := dirs[0].Parent + "/" + name
		g.v2 = &v2Dir{path: path, fd: -1}
		g.pending = append(g.pending, path)
		i = 1
	}
	for _, n := range p.v1 {
		d := &v1Dir{path: dirs[i].Parent + "/" + name, hier: n.hier, ctrls: n.ctrls}
		i++
		g.v1 = append(g.v1, d)
		g.pending = append(g.pending, d.path)
		g.answersFor(d)
	}
	return g, nil
}
