package doctor

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/hostfacts"
)

// seccompFacts are what the kernel said (hostfacts.Seccomp).
type seccompFacts struct {
	// mode is this process's seccomp mode: 0 none, 1 strict, 2 filter; -1
	// when the kernel has no seccomp.
	mode int
	// filters is Seccomp_filters of /proc/self/status, -1 when unknown.
	filters int
	// actions in report order.
	actions []hostfacts.SeccompAction
	library string
}

func seccompFactsOf(d *hostfacts.Diagnosis) seccompFacts {
	return seccompFacts{mode: d.Seccomp.Mode, filters: d.Status.SeccompFilters, actions: d.Seccomp.Actions, library: d.Seccomp.Library}
}

func seccompItem(f seccompFacts) Item {
	it := Item{ID: "seccomp", Title: "seccomp system call filter", Strict: true}
	if f.mode < 0 {
		it.Status = StatusMissing
		it.Detail = "the kernel has no seccomp (prctl PR_GET_SECCOMP: EINVAL)"
		it.Fix = "boot a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y (every major distribution's kernel has them)"
		return it
	}
	var avail, lacking []string
	needMissing := false
	var queryErr unix.Errno
	for _, a := range f.actions {
		if a.Errno == 0 {
			avail = append(avail, a.Name)
			continue
		}
		lacking = append(lacking, a.Name+" ("+errnoName(a.Errno)+")")
		if a.Need {
			needMissing = true
		}
		if a.Errno != unix.EOPNOTSUPP {
			queryErr = a.Errno
		}
	}
	self := "this process not filtered"
	switch f.mode {
	case 1:
		self = "this process in strict mode"
	case 2:
		self = "this process already filtered"
	}
	it.Detail = "filter mode available (" + self + "); actions: " + strings.Join(avail, ", ")
	if len(lacking) > 0 {
		it.Detail += "; lacking " + strings.Join(lacking, ", ")
	}
	it.Detail += "; libseccomp " + f.library
	switch f.mode {
	case 2:
		n := "some"
		if f.filters >= 0 {
			n = fmt.Sprint(f.filters)
		}
		it.Notes = append(it.Notes, "this process already runs under "+n+" seccomp filter(s) (a container's or a parent sandbox's): the helper's filter stacks on it, and whatever the outer one refuses stays refused")
	case 1:
		it.Notes = append(it.Notes, "this process is in seccomp strict mode")
	}
	it.Status = StatusOK
	if needMissing {
		it.Status = StatusDegraded
		switch {
		case queryErr == unix.EINVAL || queryErr == unix.ENOSYS:
			it.Detail += " (the kernel cannot be asked: before 4.14, or a filter refuses the seccomp call)"
			it.Fix = "boot Linux 4.14 or later (SECCOMP_RET_KILL_PROCESS and SECCOMP_GET_ACTION_AVAIL), and if this is a container, allow the seccomp system call in its profile"
		case queryErr != 0:
			it.Detail += " (a filter on this process refuses the seccomp call)"
			it.Fix = "run the container with a seccomp profile that allows seccomp(2) (docker/podman run --security-opt seccomp=PROFILE.json)"
		default:
			it.Fix = "boot Linux 4.14 or later (SECCOMP_RET_KILL_PROCESS)"
		}
	}
	return it
}
