package mountns

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
)

// OverlayAvailable reports whether the child can mount overlayfs (for the
// scratch caches), and why not: the kernel must know the filesystem (or
// have its module to load), and an unprivileged user namespace needs Linux
// 5.11 or later (and its userxattr option). It only reads files; nothing
// is mounted. A mount that fails anyway fails the run (exit 125), never
// silently leaves a cache writable.
func OverlayAvailable(privileged bool) (bool, string) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false, "uname: " + err.Error()
	}
	release := unix.ByteSliceToString(u.Release[:])
	if !privileged && !kernelAtLeast(release, 5, 11) {
		return false, "Linux " + release + " cannot mount overlayfs in a user namespace (5.11 or later can)"
	}
	if b, err := fsdeps.ReadFile("/proc/filesystems"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(strings.TrimPrefix(l, "nodev")) == "overlay" {
				return true, ""
			}
		}
	}
	if _, err := fsdeps.Stat("/sys/module/overlay"); err == nil {
		return true, ""
	}
	if _, err := fsdeps.Stat("/lib/modules/" + release + "/kernel/fs/overlayfs"); err == nil {
		return true, "" // loaded on the first mount
	}
	return false, "this kernel has no overlayfs"
}

// kernelAtLeast compares a release string ("6.1.0-18-amd64") with
// major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	digits := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if digits < 0 {
		digits = len(parts[1])
	}
	mi, err2 := strconv.Atoi(parts[1][:digits])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
