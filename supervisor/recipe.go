package supervisor

import (
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/landlock"
	"sandbox-executable/spawn"
)

// NotARecipeError says why a run is carried out by Run, not by the spawn
// stage's runner (Recipe).
type NotARecipeError struct{ Why string }

func (e *NotARecipeError) Error() string { return "not a recipe: " + e.Why }

func notARecipe(why string) error { return &NotARecipeError{Why: why} }

// Recipe lays out the run pr decided for the spawn stage's runner, which
// carries it out without this package (spawn.RunRecipe; or before the Go
// runtime starts, from a stored recipe): the same objects Run makes, in
// the same order, from the same decisions. It says why not (a
// *NotARecipeError) for a run that needs Go from its start (the allowlist
// proxy, a seccomp listener that records denials), a
// degradation to say, a private temp dir of its own, or a cgroup only New
// can make. What needs Go once the program runs (socket mediation, the
// timeout, the CPU budget, an OOM kill, orphans) the runner hands over to
// Adopt.
func (pr *Prepared) Recipe() (*spawn.Recipe, error) {
	cfg, p := pr.cfg, pr.Plan
	switch {
	case cfg.LogDenials || pr.Seccomp.Notify:
		return nil, notARecipe("denials are logged")
	case len(cfg.KeepFDs) > 0:
		return nil, notARecipe("descriptors are kept")
	case len(pr.Degradations) > 0:
		return nil, notARecipe("the run is degraded")
	case pr.net.proxy:
		return nil, notARecipe("the allowlist proxy")
	case pr.tmpDir != "" && !pr.tmpShared:
		return nil, notARecipe("a private temp dir of its own")
	case cfg.CgroupParent != "":
		return nil, notARecipe("a cgroup parent is given")
	case p.Limits.TimeoutSeconds == 0:
		return nil, notARecipe("no timeout")
	case pr.View != nil && len(pr.View.ScratchCaches) > 0:
		return nil, notARecipe("scratch caches")
	}
	r := &spawn.Recipe{
		Env:              pr.env,
		PathDirs:         pathDirs(pr.env),
		ShellFallback:    true,
		DropCapabilities: true,
		Pdeathsig:        unix.SIGKILL,
		BPF:              pr.Seccomp.BPF,
		Notify:           pr.Seccomp.NeedsListener(),
		NotifyKillable:   pr.sockets.how == socketsMediated,
		Timeout:          time.Duration(p.Limits.TimeoutSeconds) * time.Second,
		Forwarded:        forwarded,
		Guardian:         spawn.DefaultGuardianTimings,
		// A report reads the cgroup's figures before it goes.
		EndInGo: cfg.Report,
	}
	for _, root := range p.Filesystem.WritableRoots {
		if root.Create {
			r.Roots = append(r.Roots, root.Path)
		}
	}
	if pr.tmpShared {
		r.SharedTmp = pr.tmpDir
	}
	for _, l := range pr.Rlimits {
		r.Rlimits = append(r.Rlimits, spawn.Rlimit{Resource: l.Resource, Cur: l.Cur, Max: l.Max})
	}
	if v := pr.View; v != nil {
		r.NamespaceFlags, r.UnshareFlags, r.Init = v.NamespaceFlags, v.UnshareFlags, v.Init
		r.Ops = append(slices.Clip(v.Ops), pr.freshRules...)
		_, groups, err := v.ClaimPlan()
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			r.Claims = append(r.Claims, spawn.RecipeClaim{Parent: g.Parent, Dir: g.Dir, Placeholders: g.Placeholders})
		}
	}
	if err := pr.recipeCgroup(r); err != nil {
		return nil, err
	}
	if err := recipeSweep(r, pr.cgroupPlan.host != nil); err != nil {
		return nil, err
	}
	s := pr.Landlock
	r.Landlock = spawn.RecipeLandlock{ABI: s.ABI, RestrictFlags: s.RestrictFlags, HandledFS: uint64(s.HandledFS), HandledNet: s.HandledNet,
		Scoped: s.Scoped, FileRights: uint64(landlock.FileRights), NetConnect: landlock.PortRuleAccess, Ports: s.Ports}
	for _, rule := range s.Rules {
		r.Landlock.Rules = append(r.Landlock.Rules, spawn.RecipeRule{Path: rule.Path, Access: uint64(rule.Access), Required: rule.Required, Listed: uint8(rule.Listed)})
	}
	return r, nil
}

// recipeCgroup gives r the run's cgroup (cgroups.Recipe), with the stage's
// clone fallbacks for it and what the runner watches in it.
func (pr *Prepared) recipeCgroup(r *spawn.Recipe) error {
	h, lim, l := pr.cgroupPlan.host, pr.cgroupPlan.limits, pr.Plan.Limits
	v2 := false
	if h != nil {
		dirs, err := cgroups.Recipe(h, lim, cgroups.Options{MoveSelf: pr.cfg.MoveSelf})
		if err != nil {
			return notARecipe("the cgroup: " + err.Error())
		}
		for _, d := range dirs {
			c := spawn.RecipeCgroup{Parent: d.Parent, Require: strings.Join(d.Require, " "), V2: d.V2, Join: d.Join}
			for _, w := range d.Writes {
				c.Writes = append(c.Writes, spawn.RecipeCgroupWrite{File: w.File, Value: w.Value, MayMiss: w.MayMiss, SwapAccount: w.SwapAccount})
			}
			r.Cgroups = append(r.Cgroups, c)
			v2 = v2 || d.V2
			if d.Memory && l.MemoryBytes > 0 {
				r.OOMWatch = 1
				if d.V2 {
					r.OOMWatch = 2
				}
			}
		}
		if l.CPUSeconds > 0 {
			r.CPUCheck = (&cpuWatch{budget: time.Duration(l.CPUSeconds) * time.Second}).interval()
		}
	} else if l.MemoryBytes > 0 || l.Pids > 0 || l.CPUSeconds > 0 || pr.cfg.CPUQuota > 0 {
		return notARecipe("no cgroup for the limits")
	}
	// As fillProgram and newInit choose them for the cgroup made: only
	// clone3 clones into a cgroup; an init's program joins through
	// cgroup.procs where it cannot.
	r.CloneFallback = !v2 || r.Init
	r.ProgCloneFallback = !v2 || r.Init
	return nil
}

// recipeSweep gives r the state files that say whether a sweep is due
// (sweepStale), and the guardian's request for one.
func recipeSweep(r *spawn.Recipe, cgroup bool) error {
	stamp, wanted := stateFile(sweptStamp), stateFile(sweepWanted)
	if stamp == "" || wanted == "" {
		return notARecipe("no state directory")
	}
	r.SweepRequest = wanted
	r.SweepStamps = []spawn.SweepStamp{{Path: stamp, Every: sweepEvery}}
	if cgroup {
		r.SweepStamps = append(r.SweepStamps, spawn.SweepStamp{Path: stateFile(cgroupSweptStamp), Every: cgroupSweepEvery})
	}
	return nil
}

// pathDirs are the directories execCandidates searches a name without a
// slash in, cleaned, so that dir+"/"+name (name alone for ".", "/"+name for
// "/") is filepath.Join(dir, name) for any such name but "." and "..".
func pathDirs(env []string) []string {
	path, ok := lookupEnv(env, "PATH")
	if !ok {
		path = defaultPath
	}
	var out []string
	for _, d := range strings.Split(path, ":") {
		if d == "" {
			d = "."
		}
		out = append(out, filepath.Clean(d))
	}
	return out
}
