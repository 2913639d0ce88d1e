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
	"sandbox-executable/remedy"
)

// cgroupContainerFix is what gives a container a cgroup its processes may
// manage: a cgroup namespace of its own with a writable cgroup v2 (Docker
// mounts /sys/fs/cgroup read-only unless the container is privileged).
const cgroupContainerFix = "run the container with a writable cgroup v2 of its own (docker run --cgroupns=private with /sys/fs/cgroup read-write, as --privileged gives; see docs/containers.md)"

// cgroupWhy says, in one clause each, why the run's cgroup cannot be made
// and what would give it: err from cgroups.New (or the host's detection).
// A read-only cgroupfs is a container's (Docker mounts it so unless the
// container is privileged): the container's setting is named, not the
// host's remedies; otherwise the error's own hint, once.
func cgroupWhy(err error, w remedy.Words) (why, fix string) {
	var un *cgroups.UnavailableError
	if !errors.As(err, &un) {
		return err.Error(), defaultCgroupFix(w)
	}
	if errors.Is(un.Err, syscall.EROFS) || cgroupfsReadOnly() {
		return "/sys/fs/cgroup is read-only here (a container's)", cgroupContainerFix
	}
	why = "missing " + un.Missing
	var fixes []string
	if un.Hint != "" {
		fixes = append(fixes, un.Hint)
	}
	if un.Advice != 0 {
		fixes = append(fixes, un.Advice.Text(w))
	}
	if len(fixes) == 0 {
		return why, defaultCgroupFix(w)
	}
	return why, strings.Join(fixes, "; ")
}

// defaultCgroupFix is the remedy of a host without a cgroup the helper may
// manage, in w's words.
func defaultCgroupFix(w remedy.Words) string {
	return "run as root, or inside a delegated cgroup (" + w.Say(remedy.DelegatedScope) + " ...)"
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
