package supervisor

import (
	"fmt"
	"os"
	"strings"

	"sandbox-executable/cgroups"
	"sandbox-executable/hostfacts"
	"sandbox-executable/remedy"
	"sandbox-executable/rlimit"
)

// Foresee says, for --explain, what a run would decide about what only a
// run can try: its cgroup. It makes nothing: access to where the group
// would go is checked with faccessat, and the user's systemd manager, where
// a run would ask it for a scope, is only asked who it is (as doctor
// does). It fills in the cgroup's report and the degradations a run would
// add, and returns the refusal a run would end in (nil when it would run).
func (pr *Prepared) Foresee() error {
	c := pr.cgroupPlan
	var why, fix string
	if c.host == nil {
		why, fix = c.why, defaultCgroupFix(nil, false, pr.cfg.Words)
	} else {
		if pr.cfg.CgroupParent != "" {
			pr.Enforcement.Cgroup.Why = "under the cgroup parent given: whether a group can be made there is known when the run starts"
			return nil
		}
		acc, um := hostfacts.ForecastCgroup(c.host, os.Geteuid())
		if acc.Creatable {
			return nil
		}
		if um != nil && um.Err == "" && len(um.Lacks()) == 0 {
			pr.Enforcement.Cgroup.Why = "in a transient systemd user scope (Delegate=yes) from the user manager at " + um.Manager.Via +
				": this process's own cgroup cannot hold the run's (" + strings.Join(append(acc.Denied, acc.NotDelegated...), ", ") + ")"
			return nil
		}
		var missing []string
		if len(acc.Denied) > 0 {
			missing = append(missing, "not writable: "+strings.Join(acc.Denied, ", "))
		}
		if len(acc.NotDelegated) > 0 {
			missing = append(missing, "controllers not delegated: "+strings.Join(acc.NotDelegated, ", "))
		}
		why = "missing permission to create and configure cgroups (" + strings.Join(missing, "; ") + ")"
		if acc.ReadOnly {
			why = "/sys/fs/cgroup is read-only here (a container's)"
		}
		if um != nil {
			why += "; no delegated scope from the systemd user manager: " + um.Err
			if um.Err == "" {
				why += "its cgroup lacks " + strings.Join(um.Lacks(), " and ")
			}
		}
		fix = defaultCgroupFix(c.host, acc.ReadOnly, pr.cfg.Words)
	}
	held, degraded, err := pr.withoutCgroup(why, fix)
	if err != nil {
		return err
	}
	if held != "" {
		pr.Enforcement.Cgroup.Why = held
	}
	if degraded != "" {
		pr.Degradations = append(pr.Degradations, degraded)
		pr.Enforcement.Cgroup.Why = degraded
		pr.Rlimits = rlimit.For(pr.Plan.Limits, rlimit.Options{NofileCur: pr.nofile.Cur, NofileMax: pr.nofile.Max, TreeFallback: true, Root: os.Getuid() == 0})
	}
	return nil
}

// withoutCgroup decides what a run without a cgroup of its own (why, and
// fix: how to get one) may do: nothing needs one (all empty); the cgroups
// this process is already in (a container's own) bound the whole tree at
// least as tightly as asked (held says how); degradation is not allowed
// (the refusal); or it falls back to per-process rlimits (degraded says
// what is lost). It makes and changes nothing: a run and --explain
// (Foresee) decide alike.
func (pr *Prepared) withoutCgroup(why, fix string) (held, degraded string, err error) {
	l := pr.Plan.Limits
	if l.MemoryBytes == 0 && l.Pids == 0 && l.CPUSeconds == 0 && pr.cfg.CPUQuota == 0 {
		return "", "", nil // nothing needs one; the subreaper tracks the tree
	}
	msg := "no cgroup for the memory, pids and CPU limits of the whole tree (" + why + ")"
	if enc := cgroups.EnclosingLimits(pr.cgroupPlan.host); l.CPUSeconds == 0 && pr.cfg.CPUQuota == 0 &&
		(l.MemoryBytes == 0 || (enc.MemoryAt != "" && enc.MemoryBytes <= l.MemoryBytes)) &&
		(l.Pids == 0 || (enc.PidsAt != "" && enc.Pids <= uint64(l.Pids))) {
		var h []string
		if l.MemoryBytes > 0 {
			h = append(h, fmt.Sprintf("memory.max %d in %s", enc.MemoryBytes, enc.MemoryAt))
		}
		if l.Pids > 0 {
			h = append(h, fmt.Sprintf("pids.max %d in %s", enc.Pids, enc.PidsAt))
		}
		return "no cgroup of the run's own (" + why + "); the limits are held, at least as tight, by the cgroup the helper is in: " +
			strings.Join(h, ", ") + " (it bounds everything in it, the program included)", "", nil
	}
	if !pr.cfg.AllowDegraded {
		return "", "", &RefusedError{Reason: "refusing to run: " + msg + "; " + fix + ", or pass " + pr.cfg.Words.Say(remedy.AllowDegraded) + " to fall back to per-process rlimits"}
	}
	instead := ": per-process RLIMIT_DATA, RLIMIT_NPROC and RLIMIT_CPU instead"
	if os.Getuid() == 0 && l.Pids > 0 {
		// The kernel never applies RLIMIT_NPROC to uid 0: naming it as
		// the fallback would be a limit silently gone.
		instead = ": per-process RLIMIT_DATA and RLIMIT_CPU instead; max_pids is not enforced at all (RLIMIT_NPROC does not apply to root)"
	}
	return "", msg + instead, nil
}
