package fsmed

import (
	"golang.org/x/sys/unix"

	"sandbox-executable/seccomp"
)

// legacy normalizes x86_64's calls without a directory descriptor to
// their *at forms.
func legacy(c *seccomp.Call) (call, bool) {
	a := c.Args
	cwd := [2]int{unix.AT_FDCWD, unix.AT_FDCWD}
	switch int64(c.Nr) {
	case unix.SYS_OPEN:
		return call{op: opOpen, name: "open", dirfd: cwd, path: [2]uint64{a[0]}, flags: a[1], mode: uint32(a[2])}, true
	case unix.SYS_CREAT:
		return call{op: opOpen, name: "creat", dirfd: cwd, path: [2]uint64{a[0]}, flags: unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, mode: uint32(a[1])}, true
	case unix.SYS_MKDIR:
		return call{op: opMkdir, name: "mkdir", dirfd: cwd, path: [2]uint64{a[0]}, mode: uint32(a[1])}, true
	case unix.SYS_MKNOD:
		return call{op: opMknod, name: "mknod", dirfd: cwd, path: [2]uint64{a[0]}, mode: uint32(a[1]), dev: a[2]}, true
	case unix.SYS_RENAME:
		return call{op: opRename, name: "rename", dirfd: cwd, path: [2]uint64{a[0], a[1]}}, true
	case unix.SYS_UNLINK:
		return call{op: opUnlink, name: "unlink", dirfd: cwd, path: [2]uint64{a[0]}}, true
	case unix.SYS_RMDIR:
		return call{op: opUnlink, name: "rmdir", dirfd: cwd, path: [2]uint64{a[0]}, flags: unix.AT_REMOVEDIR}, true
	case unix.SYS_SYMLINK:
		return call{op: opSymlink, name: "symlink", target: a[0], dirfd: cwd, path: [2]uint64{a[1]}}, true
	case unix.SYS_LINK:
		return call{op: opLink, name: "link", dirfd: cwd, path: [2]uint64{a[0], a[1]}}, true
	}
	return call{}, false
}
