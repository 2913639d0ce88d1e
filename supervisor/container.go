package supervisor

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"sandbox-executable/cgroups"
	"sandbox-executable/fsdeps"
	"sandbox-executable/hostfacts"
	"sandbox-executable/remedy"
)

// cgroupWhy says, in one clause each, why the run's cgroup cannot be made
// and what would give it: err from cgroups.New (or the host's detection).
// A read-only cgroupfs is a container's (Docker mounts it so unless the
// container is privileged): the container's setting is named, not the
// host's remedies; otherwise the error's own hint, and the advice this
// host's facts give (hostfacts.CgroupAdvice, as doctor's), once.
func cgroupWhy(err error, host *cgroups.Host, w remedy.Words) (why, fix string) {
	var un *cgroups.UnavailableError
	if !errors.As(err, &un) {
		return err.Error(), defaultCgroupFix(host, false, w)
	}
	if errors.Is(un.Err, syscall.EROFS) || cgroupfsReadOnly() {
		return "/sys/fs/cgroup is read-only here (a container's)", defaultCgroupFix(host, true, w)
	}
	why = "missing " + un.Missing
	var fixes []string
	if un.Hint != "" {
		fixes = append(fixes, un.Hint)
	}
	switch {
	case os.Geteuid() != 0:
		fixes = append(fixes, defaultCgroupFix(host, false, w))
	case un.Advice != 0:
		fixes = append(fixes, un.Advice.Text(w))
	}
	if len(fixes) == 0 {
		return why, defaultCgroupFix(host, false, w)
	}
	return why, strings.Join(fixes, "; ")
}

// defaultCgroupFix is how this host gives runs a cgroup, in w's words
// (hostfacts.CgroupAdvice, as doctor says it).
func defaultCgroupFix(host *cgroups.Host, readOnly bool, w remedy.Words) string {
	v1 := host == nil || host.V2 == nil || !host.V2.Has("memory") || !host.V2.Has("pids")
	return hostfacts.CgroupAdvice(hostfacts.CgroupAdviceFacts{EUID: os.Geteuid(), ReadOnly: readOnly, V1Limits: v1 && host != nil,
		Systemd: hostfacts.SystemdRunning()}, w)
}

// capabilitiesWithoutNamespaces is what a program started outside any user
// namespace keeps: as root, or with CAP_SETPCAP, what def says; a user
// without CAP_SETPCAP cannot change its bounding set or securebits, and
// the spawn stage leaves them (nothing to lose: no root, and under
// no_new_privs no exec grants a capability).
func capabilitiesWithoutNamespaces(def string) string {
	if os.Geteuid() == 0 || os.Getuid() == 0 || effectiveCap(capSetpcap) {
		return def
	}
	return "none: effective, permitted, inheritable and ambient sets empty; the bounding set and securebits stay as they are (a user without CAP_SETPCAP cannot change them; under no_new_privs no exec grants a capability)"
}

// capSetpcap is CAP_SETPCAP's number.
const capSetpcap = 8

// effectiveCap reports whether this process's effective set holds cap
// (decided by Prepare: the capabilities are in the recipe's key, and this
// process's own status is read unrecorded).
func effectiveCap(c uint) bool {
	b, err := fsdeps.ReadProcSelf("/proc/self/status", "CapEff (capabilities)")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && n&(1<<c) != 0
		}
	}
	return false
}

// cgroupfsReadOnly reports whether every cgroup filesystem this process
// sees is mounted read-only (as in an unprivileged container), whatever
// error creating a group met first (a user's EACCES before EROFS).
func cgroupfsReadOnly() bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	seen := false
	for line := range strings.Lines(string(b)) {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(g) < 1 || (g[0] != "cgroup2" && g[0] != "cgroup") {
			continue
		}
		seen = true
		if !slices.Contains(strings.Split(f[5], ","), "ro") {
			return false
		}
	}
	return seen
}
