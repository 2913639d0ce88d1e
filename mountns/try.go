package mountns

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
	"sandbox-executable/spawn"
)

// Attempt is one real namespace creation: a child cloned with the flags,
// which unshares, maps its ids and mounts as a run's child does, then exits.
// Nothing runs in it.
type Attempt struct {
	// Flags are the CLONE_NEW* flags tried (the unshare's included).
	Flags uintptr
	OK    bool
	// Step is the failed step ("clone", "unshare", "setup"), Detail what
	// it was doing, Errno its error.
	Step   string
	Detail string
	Errno  unix.Errno
	// Err is any failure, as text; TimedOut says no answer came in time.
	Err      string
	TimedOut bool
}

// FlagNames names clone flags: "CLONE_NEWUSER|CLONE_NEWNS".
func FlagNames(flags uintptr) string {
	var names []string
	for _, f := range []struct {
		bit  uintptr
		name string
	}{{unix.CLONE_NEWUSER, "CLONE_NEWUSER"}, {unix.CLONE_NEWNS, "CLONE_NEWNS"}, {unix.CLONE_NEWPID, "CLONE_NEWPID"},
		{unix.CLONE_NEWIPC, "CLONE_NEWIPC"}, {unix.CLONE_NEWUTS, "CLONE_NEWUTS"}, {unix.CLONE_NEWNET, "CLONE_NEWNET"},
		{unix.CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}} {
		if flags&f.bit != 0 {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, "|")
}

// Try creates the namespaces flags names in a child, as the spawn stage
// creates a run's: through a user namespace that maps this user to itself
// when userns is set; CLONE_NEWCGROUP by unshare(2) once cloned (as a run's
// program does); with CLONE_NEWNS, / made private and, with CLONE_NEWPID, a
// procfs of the new PID namespace mounted on /proc (a container that masks
// parts of /proc refuses that inside a user namespace); with CLONE_NEWNET,
// the loopback interface brought up. The child exits as
// soon as that is done. timeout 0 waits for the answer however long it
// takes; otherwise an attempt that has not answered by then is reported as
// TimedOut (and reaped whenever it ends).
func Try(flags uintptr, userns bool, timeout time.Duration) Attempt {
	trial := &spawn.Trial{NamespaceFlags: flags &^ unix.CLONE_NEWCGROUP, UnshareFlags: flags & unix.CLONE_NEWCGROUP}
	if userns {
		trial.NamespaceFlags |= unix.CLONE_NEWUSER
		uid, gid := os.Geteuid(), os.Getegid()
		trial.Ops = append(trial.Ops,
			spawn.WriteFile("/proc/self/setgroups", "deny", "user namespace: setgroups deny"),
			spawn.WriteFile("/proc/self/uid_map", fmt.Sprintf("%d %d 1", uid, uid), "user namespace: uid map"),
			spawn.WriteFile("/proc/self/gid_map", fmt.Sprintf("%d %d 1", gid, gid), "user namespace: gid map"))
	}
	if flags&unix.CLONE_NEWNET != 0 {
		// Needs CAP_NET_ADMIN where the namespace is owned: a container's
		// root with CAP_SYS_ADMIN but not it gets the namespace, not lo.
		trial.Ops = append(trial.Ops, spawn.LoopbackUp("bring up the loopback interface"))
	}
	if flags&unix.CLONE_NEWNS != 0 {
		trial.Ops = append(trial.Ops, spawn.MakePrivate("/", "make / private"))
		if flags&unix.CLONE_NEWPID != 0 {
			trial.Ops = append(trial.Ops, spawn.MountNew("proc", "/proc", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "", "private /proc"))
		}
	}
	a := Attempt{Flags: trial.NamespaceFlags | trial.UnshareFlags}
	done := make(chan Attempt, 1)
	go func(a Attempt) { done <- try(trial, a) }(a)
	if timeout <= 0 {
		return <-done
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r
	case <-timer.C:
		a.TimedOut = true
		a.Err = fmt.Sprintf("no answer within %v", timeout)
		return a
	}
}

func try(trial *spawn.Trial, a Attempt) Attempt {
	proc, err := trial.Start()
	if proc != nil {
		// The child has left our memory (CLONE_VFORK) but may still be
		// tearing its namespaces down, which can wait for RCU grace
		// periods: reap it off the caller's path. Through its pidfd where
		// there is one, which no other process can stand for; without
		// clone3 there is none, and the pid stays ours until reaped.
		go reap(proc)
	}
	if err == nil {
		a.OK = true
		return a
	}
	a.Err = err.Error()
	if se, ok := err.(*spawn.Error); ok {
		a.Step, a.Detail, a.Errno = se.Step.String(), se.Detail, se.Errno
	}
	return a
}

func reap(p *spawn.Process) {
	var info unix.Siginfo
	if p.PidFD >= 0 {
		for unix.Waitid(unix.P_PIDFD, p.PidFD, &info, unix.WEXITED|unix.WALL, nil) == unix.EINTR {
		}
		unix.Close(p.PidFD)
		return
	}
	var st unix.WaitStatus
	for {
		if _, err := unix.Wait4(p.Pid, &st, unix.WALL, nil); err != unix.EINTR {
			return
		}
	}
}

// runFlags are the namespaces a run's child gets (mountns.View): PID, IPC
// and UTS with its init, a mount namespace, a cgroup namespace, and (where
// the policy keeps the program off the network, or on an allowlist) a
// network namespace.
const runFlags = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// probed is Probe's answer in this decision.
var probed fsdeps.Memo[Availability]

// Probe says whether this process can give a run's child its namespaces,
// by trying (Try) what a run does, once per decision: first with a network
// namespace, then, if that is refused, without one. Without CAP_SYS_ADMIN
// the attempts go through a user namespace.
func Probe() Availability {
	return probed.Get(probeNow)
}

// Assume is the Availability Probe finds on a host where nothing stands in
// the way of a run's namespaces, for a caller that lets the run's own child
// be the trial: that child makes the same namespaces, in the same order,
// as Try's, so where they are refused the run fails before its program
// starts, and the caller then tries (Probe) and decides again. ok is false
// where a refusal is likely and assuming would only add a failed start:
// under a seccomp filter (a container's), or, without CAP_SYS_ADMIN, where
// a sysctl or AppArmor keeps unprivileged user namespaces off.
func Assume() (av Availability, ok bool) {
	a := assumed.Get(func() assumption {
		av, ok := assume()
		return assumption{av, ok}
	})
	return a.av, a.ok
}

// assumed is Assume's answer in this decision (it reads /proc/sys).
var assumed fsdeps.Memo[assumption]

type assumption struct {
	av Availability
	ok bool
}

func assume() (Availability, bool) {
	caps, filtered := selfStatus()
	if filtered {
		return Availability{}, false
	}
	priv := caps&(1<<capSysAdmin) != 0
	if !priv {
		for _, s := range []struct {
			name string
			bad  int
		}{{"user/max_user_namespaces", 0}, {"kernel/unprivileged_userns_clone", 0}, {"kernel/apparmor_restrict_unprivileged_userns", 1}} {
			if v, set := readInt("/proc/sys/" + s.name); set && v == s.bad {
				return Availability{}, false
			}
		}
	}
	return available(priv, true), true
}

func probeNow() Availability {
	// A trial's answer comes from a clone, not from a file: no recorded
	// dependency can say it still holds.
	fsdeps.Taint("mountns: the namespaces were tried (a clone), an answer no dependency can check")
	priv := hasCap(capSysAdmin)
	full := Try(runFlags|unix.CLONE_NEWNET, !priv, 0)
	if full.OK {
		return available(priv, true)
	}
	bare := Try(runFlags, !priv, 0)
	if bare.OK {
		av := available(priv, false)
		av.NetworkWhy = "no network namespace: " + full.Failure()
		if full.Step == "setup" && full.Errno == unix.EPERM && priv {
			av.NetworkWhy += " (no CAP_NET_ADMIN: a container's; docker run --cap-add NET_ADMIN gives it)"
		}
		return av
	}
	why, fix := diagnose(priv, bare)
	return Availability{Privileged: priv, Why: why, Fix: fix, Attempt: &bare}
}

func available(priv, network bool) Availability {
	av := Availability{OK: true, Privileged: priv, Network: network}
	if priv {
		av.Why = "CAP_SYS_ADMIN: namespaces without a user namespace (tried)"
	} else {
		av.Why = "a user namespace that maps the user to itself, and the run's namespaces in it (tried)"
	}
	return av
}

// Failure says what the attempt did and how it failed.
func (a Attempt) Failure() string {
	what := "clone(CLONE_NEW{" + strings.ReplaceAll(FlagNames(a.Flags), "CLONE_NEW", "") + "})"
	switch a.Step {
	case "unshare":
		what = "unshare(CLONE_NEWCGROUP)"
	case "clone", "":
		what = strings.ReplaceAll(what, "|", ",")
	case "setup":
		what = a.Detail
	}
	msg := a.Err
	if a.Errno != 0 {
		msg = a.Errno.Error()
		if n := unix.ErrnoName(a.Errno); n != "" {
			msg = n
		}
	}
	return what + ": " + msg
}

// Container settings that give a container's root the namespaces a run
// needs: CAP_SYS_ADMIN (Docker's default seccomp profile then allows
// clone, unshare and mount with namespace flags) without AppArmor's
// docker-default (which denies mount); or no seccomp filter and a fully
// visible /proc, for the user-namespace route a non-root user takes.
const (
	containerFixRoot = "run the container with --cap-add SYS_ADMIN --security-opt apparmor=unconfined (Kubernetes: capabilities add SYS_ADMIN, appArmorProfile Unconfined)"
	containerFixUser = "run the container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined (Kubernetes: seccompProfile and appArmorProfile Unconfined, procMount Unmasked)"
)

// ContainerFix names the container settings that give the helper its
// namespaces where a container's seccomp filter refuses them: for its
// root (uid 0) or for a non-root user.
func ContainerFix(root bool) string {
	if root {
		return containerFixRoot
	}
	return containerFixUser
}

// AppArmorFix names what gives a binary at exe ("" when unknown), whose
// AppArmor label is label, its user namespaces where AppArmor restricts
// them (Ubuntu 23.10 and later): the shipped profile (packaging/apparmor),
// attached to the binary's own path, and how to load it; a profile that
// already confines it needs userns. The run's refusal and doctor say it.
func AppArmorFix(label, exe string) string {
	if label != "" && label != "unconfined" {
		return "the AppArmor profile " + label + " does not allow userns: add `userns,` to it (packaging/apparmor/sandbox-executable has it), or run as root"
	}
	path := "the installed binary's path"
	if exe != "" {
		path = "this binary's path, " + exe + ","
	}
	return "install packaging/apparmor/sandbox-executable in /etc/apparmor.d with " + path +
		" in its attachment, and load it (sudo apparmor_parser -r), or run as root"
}

// AppArmorLabel is this process's AppArmor label ("unconfined", or a
// profile's name and mode), "" where AppArmor says nothing.
func AppArmorLabel() string {
	for _, f := range []string{"/proc/self/attr/apparmor/current", "/proc/self/attr/current"} {
		if b, err := os.ReadFile(f); err == nil {
			l := strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
			if l != "" {
				return l
			}
		}
	}
	return ""
}

// executable is this binary's path ("sandbox-executable" when unknown).
func executable() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "sandbox-executable"
}

// diagnose explains a failed attempt and names what unlocks it.
func diagnose(priv bool, a Attempt) (why, fix string) {
	why = "no namespaces: " + a.Failure()
	sysctl := func(name string, bad int) bool { v, ok := readInt("/proc/sys/" + name); return ok && v == bad }
	switch {
	case !priv && sysctl("user/max_user_namespaces", 0):
		return why + " (user.max_user_namespaces is 0)", "raise user.max_user_namespaces, or run as root"
	case !priv && sysctl("kernel/unprivileged_userns_clone", 0):
		return why + " (kernel.unprivileged_userns_clone is 0)", "set kernel.unprivileged_userns_clone to 1, or run as root"
	case !priv && sysctl("kernel/apparmor_restrict_unprivileged_userns", 1):
		return why + " (AppArmor restricts unprivileged user namespaces)", AppArmorFix(AppArmorLabel(), executable())
	case a.Errno != unix.EPERM && a.Errno != unix.ENOSYS && a.Errno != unix.EACCES:
		return why, "see sandbox-executable doctor"
	case seccompFiltered() && os.Geteuid() == 0:
		return why + " under this process's seccomp filter (a container's)", containerFixRoot
	case seccompFiltered():
		return why + " under this process's seccomp filter (a container's)", containerFixUser
	case a.Step == "setup" && !priv:
		return why + " (a container's masked /proc, or an LSM)", containerFixUser
	}
	return why + " (an LSM policy: AppArmor, SELinux)", "allow namespaces and mount for sandbox-executable in that policy (a container: --security-opt apparmor=unconfined)"
}
