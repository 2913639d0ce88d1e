package supervisor

import (
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/landlock"
	"sandbox-executable/spawn"
)

// Recipe lays out the run pr decided (and Ready readied) for the spawn
// stage's runner, which carries out every run: the objects it makes, in
// order, the child it starts and how it ends the run. The runner decides
// nothing; what needs Go while the program runs it asks of the service
// (Service). says are the lines the run says on stderr as it starts and
// for each ending it gives (indexed as spawn.Recipe.Say).
func (pr *Prepared) Recipe(says [spawn.EndingsN]string) (*spawn.Recipe, error) {
	cfg, p := pr.cfg, pr.Plan
	r := &spawn.Recipe{
		Env:              pr.env,
		PathDirs:         pathDirs(pr.env),
		ShellFallback:    true,
		DropCapabilities: true,
		Pdeathsig:        unix.SIGKILL,
		BPF:              pr.Seccomp.BPF,
		Notify:           pr.Seccomp.NeedsListener(),
		NotifyKillable:   pr.sockets.how == socketsMediated || pr.files != nil,
		KeepFDs:          cfg.KeepFDs,
		Timeout:          time.Duration(p.Limits.TimeoutSeconds) * time.Second,
		Grace:            grace(cfg),
		Guardian:         spawn.DefaultGuardianTimings,
		CPUUsage:         spawn.NoCounter,
		OOMKills:         spawn.NoCounter,
		PidsHits:         spawn.NoCounter,
		// A report reads the cgroup's figures before it goes, and a run
		// with a temp dir of its own has it removed by Go.
		EndInGo:     cfg.Report || pr.ownTmp != "" || (pr.View != nil && pr.View.KeepsLayers),
		GoFromStart: pr.Seccomp.Notify || pr.net.proxy || pr.audit.Read,
		Audit:       pr.audit.Read,
		Proxy:       pr.net.proxy && !pr.net.hostProxy,
		Layers:      pr.View != nil && pr.View.KeepsLayers,
		Say:         says,
	}
	if len(pr.Degradations) > 0 {
		degraded := "sandbox-executable: degraded (--allow-degraded): " + strings.Join(pr.Degradations, "; ")
		if r.Say[0] != "" {
			degraded = r.Say[0] + "\n" + degraded
		}
		r.Say[0] = degraded
	}
	for _, root := range p.Filesystem.WritableRoots {
		if root.Create {
			r.Roots = append(r.Roots, root.Path)
		}
	}
	if pr.tmpShared {
		r.SharedTmp = pr.tmpDir
	}
	if pr.ownTmp != "" {
		r.TmpDir, r.TmpRecord, r.TmpFD = pr.ownTmp, pr.ownTmpRecord, int(pr.tmpLock.Fd())
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
			r.Claims = append(r.Claims, spawn.RecipeClaim{Parent: g.Parent, ParentID: g.ParentID, Dir: g.Dir, Placeholders: g.Placeholders})
		}
	}
	pr.recipeCgroup(r)
	recipeSweep(r, pr.cgroupPlan.host != nil)
	s := pr.Landlock
	r.Landlock = spawn.RecipeLandlock{ABI: s.ABI, RestrictFlags: s.RestrictFlags, HandledFS: uint64(s.HandledFS), HandledNet: s.HandledNet,
		Scoped: s.Scoped, FileRights: uint64(landlock.FileRights), NetConnect: landlock.PortRuleAccess, Ports: s.Ports}
	for _, rule := range s.Rules {
		r.Landlock.Rules = append(r.Landlock.Rules, spawn.RecipeRule{Path: rule.Path, Access: uint64(rule.Access), Required: rule.Required, Entries: rule.Entries, Except: rule.Except})
	}
	return r, nil
}

// recipeCgroup gives r the run's cgroup (the directories Ready readied),
// with the stage's clone fallbacks for it and what the runner reads in it.
func (pr *Prepared) recipeCgroup(r *spawn.Recipe) {
	l := pr.Plan.Limits
	v2 := false
	for i, d := range pr.cgroupDirs {
		c := spawn.RecipeCgroup{Parent: d.Parent, Require: strings.Join(d.Require, " "), V2: d.V2, Join: d.Join}
		for _, w := range d.Writes {
			c.Writes = append(c.Writes, spawn.RecipeCgroupWrite{File: w.File, Value: w.Value, MayMiss: w.MayMiss, SwapAccount: w.SwapAccount})
		}
		r.Cgroups = append(r.Cgroups, c)
		v2 = v2 || d.V2
		switch {
		case d.V2:
			// Every process of the run is in the v2 directory: its CPU
			// time is counted there.
			r.CPUUsage = spawn.RecipeCounter{Cgroup: i, File: "cpu.stat", Key: "usage_usec", Scale: 1000}
		case d.CPUAcct && r.CPUUsage.File == "":
			r.CPUUsage = spawn.RecipeCounter{Cgroup: i, File: "cpuacct.usage", Scale: 1}
		}
		if d.Memory && l.MemoryBytes > 0 {
			if d.V2 {
				r.OOMWatch = 2
				r.OOMKills = spawn.RecipeCounter{Cgroup: i, File: "memory.events", Key: "oom_kill", Scale: 1}
			} else {
				r.OOMWatch = 1
				r.OOMKills = spawn.RecipeCounter{Cgroup: i, File: "memory.oom_control", Key: "oom_kill", Scale: 1}
			}
		}
		if d.Pids && l.Pids > 0 {
			r.PidsHits = spawn.RecipeCounter{Cgroup: i, File: "pids.events", Key: "max", Scale: 1}
		}
	}
	if l.CPUSeconds > 0 && len(pr.cgroupDirs) > 0 {
		r.CPUBudget = time.Duration(l.CPUSeconds) * time.Second
		r.CPUSpread = 2 * runtime.NumCPU()
	}
	r.CgroupMade = pr.cgroupMade
	// Only clone3 clones into a cgroup; an init's program joins through
	// cgroup.procs where it cannot.
	r.CloneFallback = !v2 || r.Init
	r.ProgCloneFallback = !v2 || r.Init
}

// recipeSweep gives r the state files that say whether a sweep is due
// (sweepStale), and the guardian's request for one.
func recipeSweep(r *spawn.Recipe, cgroup bool) {
	stamp, wanted := stateFile(sweptStamp), stateFile(sweepWanted)
	if stamp == "" || wanted == "" {
		return
	}
	r.SweepRequest = wanted
	r.SweepStamps = []spawn.SweepStamp{{Path: stamp, Every: sweepEvery}}
	if cgroup {
		r.SweepStamps = append(r.SweepStamps, spawn.SweepStamp{Path: stateFile(cgroupSweptStamp), Every: cgroupSweepEvery})
	}
}
