package doctor

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"sandbox-executable/hostfacts"
	"sandbox-executable/landlock"
	"sandbox-executable/mountns"
)

// nsAttempt is one real namespace creation (mountns.Try, in
// hostfacts.Trials): a child cloned with the flags, as the helper's run
// would clone it.
type nsAttempt struct {
	flags    string
	ok       bool
	errno    unix.Errno // when the clone (or the id mapping) failed
	err      string     // any failure, as text
	timedOut bool
	what     string // the step after the clone that failed, if any
}

// nsProbes are the attempts of hostfacts.Trials, as doctor shows them.
type nsProbes struct {
	privileged bool
	user       nsAttempt // unprivileged only
	mnt, net   nsAttempt
}

// attemptOf is how doctor shows one attempt.
func attemptOf(r mountns.Attempt) nsAttempt {
	a := nsAttempt{flags: mountns.FlagNames(r.Flags), ok: r.OK, errno: r.Errno, err: r.Err, timedOut: r.TimedOut}
	switch r.Step {
	case "setup":
		a.what = r.Detail + " in the namespaces"
	case "unshare":
		a.what = "unshare(CLONE_NEWCGROUP)"
	}
	return a
}

// nsFacts are the attempts plus the settings that explain a failure.
type nsFacts struct {
	probes nsProbes
	euid   int
	// Sysctls, -1 when absent.
	maxUserNS, maxMntNS, maxNetNS, unprivClone, aaRestrict int
	filtered                                               bool
	container                                              bool
	// helper is what the helper's own pre-check (mountns.Probe) predicts.
	helper mountns.Availability
	// exe is this binary's path, for the AppArmor profile's attachment,
	// and aaLabel this process's AppArmor label.
	exe, aaLabel string
	// abstractMediated: abstract unix names are mediated, not scoped by
	// Landlock (ABI < 6), where a run shares the host's network; diagErr is
	// why sock_diag, which the mediation asks, cannot answer ("" when it can).
	abstractMediated bool
	diagErr          string
}

func nsFactsOf(f *hostfacts.Facts, d *hostfacts.Diagnosis, h Host) nsFacts {
	t, sc := d.Trials, d.Sysctls
	return nsFacts{
		probes:      nsProbes{privileged: t.Privileged, user: attemptOf(t.User), mnt: attemptOf(t.Mnt), net: attemptOf(t.Net)},
		euid:        f.EUID,
		maxUserNS:   sc.MaxUserNS,
		maxMntNS:    sc.MaxMntNS,
		maxNetNS:    sc.MaxNetNS,
		unprivClone: sc.UnprivClone,
		aaRestrict:  sc.AppArmorRestrict,
		filtered:    d.Status.Seccomp == 2,
		container:   h.Container.Likely,
		helper:      f.Namespaces,
		exe:         executable(),
		aaLabel:     mountns.AppArmorLabel(),

		abstractMediated: !landlock.Supports(f.LandlockABI, landlock.FeatScoping),
		diagErr:          d.UnixDiagErr,
	}
}

// executable is this binary's path, "" when unknown.
func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// usernsBlock says why the sysctls keep unprivileged users from user
// namespaces, with the fix; empty when they do not.
func usernsBlock(f nsFacts) (why, fix string) {
	switch {
	case f.maxUserNS == 0:
		return "user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000 && echo user.max_user_namespaces=15000 > /etc/sysctl.d/60-userns.conf; or run as root"
	case f.unprivClone == 0:
		return "kernel.unprivileged_userns_clone is 0 (Debian's switch)", "sysctl -w kernel.unprivileged_userns_clone=1 && echo kernel.unprivileged_userns_clone=1 > /etc/sysctl.d/60-userns.conf; or run as root"
	case f.aaRestrict == 1:
		return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns is 1, Ubuntu 23.10+)", mountns.AppArmorFix(f.aaLabel, f.exe)
	}
	return "", ""
}

// nsDiagnose explains a failed attempt; kind is "user", "mnt" or "net".
func nsDiagnose(f nsFacts, a nsAttempt, kind string) (why, fix string) {
	limit := map[string]string{"user": "user.max_user_namespaces", "mnt": "user.max_mnt_namespaces", "net": "user.max_net_namespaces"}[kind]
	limitVal := map[string]int{"user": f.maxUserNS, "mnt": f.maxMntNS, "net": f.maxNetNS}[kind]
	raise := fmt.Sprintf("sysctl -w %s=15000 && echo %s=15000 > /etc/sysctl.d/60-userns.conf", limit, limit)
	if a.timedOut {
		return "the clone did not finish in time", "run sandbox-executable doctor again on an idle host; a clone that keeps hanging points at the kernel or an LSM (journalctl -k)"
	}
	if !f.probes.privileged {
		if why, fix := usernsBlock(f); why != "" {
			return why, fix
		}
	}
	switch {
	case limitVal == 0:
		return limit + " is 0", raise
	case a.errno == unix.ENOSPC:
		return "a namespace limit is reached (" + limit + " or user.max_user_namespaces)", raise
	case a.errno == unix.EINVAL:
		return "the kernel lacks this namespace type", "boot a kernel with CONFIG_USER_NS=y, CONFIG_NET_NS=y and CONFIG_NAMESPACES=y"
	case a.errno == unix.EPERM && f.filtered:
		return "a seccomp filter on this process (a container's) refuses namespace creation", mountns.ContainerFix(f.euid == 0) + "; or run on the host"
	case a.errno == unix.EPERM && f.container:
		return "the container refuses it (capabilities, LSM policy or user namespace nesting)", "run the container with --cap-add SYS_ADMIN --security-opt seccomp=unconfined --security-opt apparmor=unconfined, or run on the host"
	case a.errno == unix.EPERM && f.probes.privileged:
		return "refused despite CAP_SYS_ADMIN: an LSM policy (SELinux, AppArmor)", "find the denial with journalctl -k | grep -i denied and allow namespace creation for sandbox-executable in that policy"
	case a.errno != 0:
		return errnoText(a.errno), "run as root (sudo sandbox-executable ...)"
	default:
		return a.err, "run as root (sudo sandbox-executable ...)"
	}
}

func attemptText(a nsAttempt) string {
	msg := a.err
	if a.errno != 0 {
		msg = errnoText(a.errno)
	}
	if a.what != "" {
		return "clone(" + a.flags + ") worked, " + a.what + " failed: " + msg
	}
	return "clone(" + a.flags + ") failed: " + msg
}

func createdHow(f nsFacts) string {
	if f.probes.privileged {
		return "created with CAP_SYS_ADMIN (no user namespace needed)"
	}
	return fmt.Sprintf("created inside a user namespace (uid %d mapped to itself)", f.euid)
}

// helperNote flags a disagreement between the real attempt and the
// helper's pre-check, which decides --fs-mode auto.
func helperNote(f nsFacts, ok bool) []string {
	if f.helper.Why == "" || f.helper.OK == ok {
		return nil
	}
	if f.helper.OK {
		return []string{"the helper's pre-check (mountns.Probe) expects a mount namespace here, but the kernel refused: runs in exact mode will fail at clone time"}
	}
	return []string{"the helper's pre-check (mountns.Probe) says no (" + f.helper.Why + "), though the kernel allowed it: --fs-mode auto will not use exact mode"}
}

func mountnsItem(f nsFacts) Item {
	it := Item{ID: "mountns", Title: "mount namespace (exact filesystem mode)", Strict: true}
	a := f.probes.mnt
	if a.ok {
		it.Status = StatusOK
		it.Detail = createdHow(f) + ": exact filesystem mode available"
	} else {
		it.Status = StatusMissing
		why, fix := nsDiagnose(f, a, "mnt")
		it.Detail = attemptText(a) + ": " + why
		it.Fix = fix
		it.Notes = append(it.Notes, "without it only Landlock-only mode runs (narrower, and chmod/chown/utimes outside the roots are not stopped), and only with --allow-degraded; without that the helper refuses")
	}
	it.Notes = append(it.Notes, helperNote(f, a.ok)...)
	return it
}

func netnsItem(f nsFacts) Item {
	it := Item{ID: "netns", Title: "network namespace (network allowlist)", Strict: true}
	if f.abstractMediated && f.diagErr != "" {
		it.Notes = append(it.Notes, "abstract unix sockets: sock_diag cannot list unix sockets ("+f.diagErr+
			"; the unix_diag module: modprobe unix_diag), so a run that shares the host's network is refused every abstract name")
	}
	a := f.probes.net
	if a.ok {
		it.Status = StatusOK
		it.Detail = createdHow(f) + ": the network allowlist can be enforced (loopback-only namespace, proxy outside)"
		return it
	}
	it.Status = StatusMissing
	why, fix := nsDiagnose(f, a, "net")
	it.Detail = attemptText(a) + ": " + why
	it.Fix = fix
	it.Notes = append(it.Notes, "policies with a network allowlist cannot be enforced; no-network policies still hold (seccomp allows only AF_UNIX sockets)")
	return it
}

func usernsItem(f nsFacts) Item {
	it := Item{ID: "userns", Title: "unprivileged user namespaces"}
	if f.probes.privileged {
		it.Status = StatusOK
		it.Detail = "not needed here: CAP_SYS_ADMIN creates mount and network namespaces directly"
		if why, _ := usernsBlock(f); why != "" {
			it.Notes = append(it.Notes, "for users without CAP_SYS_ADMIN (not tried): "+why)
		} else {
			it.Notes = append(it.Notes, "for users without CAP_SYS_ADMIN (not tried): no sysctl forbids them")
		}
		return it
	}
	a := f.probes.user
	if a.ok {
		it.Status = StatusOK
		it.Detail = fmt.Sprintf("created (uid %d mapped to itself)", f.euid)
		if f.aaRestrict == 1 {
			it.Notes = append(it.Notes, "AppArmor restricts unprivileged user namespaces, and allowed this process one")
		}
		return it
	}
	it.Status = StatusMissing
	why, fix := nsDiagnose(f, a, "user")
	it.Detail = attemptText(a) + ": " + why
	it.Fix = fix
	return it
}
