package hostfacts

import (
	"os"

	"sandbox-executable/cgroups"
	"sandbox-executable/remedy"
)

// Like the rest of doctor's facts, nothing here is recorded (fsdeps): it
// is read only for advice, by doctor, a run's refusal and --explain, and
// no decision a run stores depends on it.

// CgroupAdviceFacts are what the advice on getting a cgroup depends on.
type CgroupAdviceFacts struct {
	EUID int
	// ReadOnly: the cgroup filesystem is mounted read-only (a
	// container's).
	ReadOnly bool
	// V1Limits: memory or pids live on cgroup v1 here (a hybrid or legacy
	// host): systemd delegates only cgroup2 controllers to a user.
	V1Limits bool
	// Systemd: systemd is the running init.
	Systemd bool
}

// SystemdRunning reports whether systemd is the running init, as
// sd_booted(3) tells it.
func SystemdRunning() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// CgroupAdvice is how a process that cannot make a cgroup where runs need
// one gets one on this host, in w's words: the one source of that advice
// for doctor and for a run's refusal, so that neither suggests a systemd
// user scope where there can be none.
func CgroupAdvice(f CgroupAdviceFacts, w remedy.Words) string {
	if f.ReadOnly {
		return "run the container with a writable cgroup v2 of its own (docker run --cgroupns=private with /sys/fs/cgroup read-write, as --privileged gives; see docs/containers.md)"
	}
	root := "run as root (sudo " + w.Say(remedy.Invocation) + ")"
	scope := w.Say(remedy.DelegatedScope) + " " + w.Say(remedy.Invocation)
	switch {
	case f.EUID == 0:
		return "run in a cgroup whose memory and pids controllers this root process may manage (its own cgroup, or " + w.Say(remedy.CgroupParent) + ")"
	case f.V1Limits && f.Systemd:
		return root + "; a user can only be delegated cgroup2 controllers, and memory/pids are on v1 here: boot with systemd.unified_cgroup_hierarchy=1, then " + scope
	case f.V1Limits:
		return root + "; memory and pids are cgroup v1 controllers here, which cannot be delegated to a user"
	case f.Systemd:
		return root + ", or in a delegated cgroup: " + scope
	}
	// Without systemd there is no user manager to delegate a scope:
	// the delegation is root's to make, by hand (cgroup v2's own rule).
	return root + ", or in a cgroup v2 subtree root delegated to this user (owning its cgroup.procs and cgroup.subtree_control)"
}

// ForecastCgroup is what a run of this process would find of the cgroup
// its group goes in (on host h), without making one: the access
// cgroups.New needs (faccessat, as doctor checks it), and, where a run
// would ask the user's systemd manager for a delegated scope, what that
// manager says of itself (it is asked who it is; no scope is made). For
// --explain, so that it says what a run would do.
func ForecastCgroup(h *cgroups.Host, euid int) (CgroupAccess, *UserManager) {
	a := CgroupAccessOf(h, euid, writable)
	if !needsUserManager(&Facts{Cgroups: h, EUID: euid}, a) {
		return a, nil
	}
	return a, askUserManager(h)
}
