package deputy

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Lookup is a pathname to resolve as a thread of the program would: the
// path, made absolute with the thread's working directory (or the
// directory a descriptor of its names), and an O_PATH descriptor of the
// thread's root.
type Lookup struct {
	root int
	path string
}

// NewLookup takes what resolving path relative to dirfd (unix.AT_FDCWD:
// the working directory) needs from thread tid: its root, and the
// directory the path starts from, as the supervisor reads them from the
// program (before the call). valid says whether the caller still waits
// (seccomp.Call.Valid): what was read is the caller's only then. Magic
// links (/proc/self/...) are not followed when the lookup is made: they
// would name the supervisor.
func NewLookup(valid func() bool, tid, dirfd int, path string) (*Lookup, unix.Errno) {
	proc := "/proc/" + strconv.Itoa(tid)
	if !strings.HasPrefix(path, "/") {
		link := proc + "/cwd"
		if dirfd != unix.AT_FDCWD {
			if dirfd < 0 {
				return nil, unix.EBADF
			}
			link = proc + "/fd/" + strconv.Itoa(dirfd)
		}
		dir, err := os.Readlink(link)
		switch {
		case err != nil && dirfd != unix.AT_FDCWD:
			return nil, unix.EBADF
		case err != nil:
			return nil, unix.ENOENT
		case !strings.HasPrefix(dir, "/"):
			return nil, unix.ENOTDIR // a pipe, a socket, an anonymous inode
		case strings.HasSuffix(dir, " (deleted)"):
			return nil, unix.ENOENT // a removed directory has no entries
		}
		path = dir + "/" + path
	}
	root, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, unix.ENOENT
	}
	// The root (and the directory read above) are the caller's only if
	// it still waits.
	if !valid() {
		unix.Close(root)
		return nil, unix.ESRCH
	}
	return &Lookup{root: root, path: path}, 0
}

// Close releases the lookup's descriptor.
func (l *Lookup) Close() {
	if l != nil && l.root >= 0 {
		unix.Close(l.root)
		l.root = -1
	}
}

// Open opens the path in the thread's root (openat2 RESOLVE_IN_ROOT) as an
// O_PATH descriptor, with flags added (O_DIRECTORY, O_NOFOLLOW). It is the
// program's own lookup when made as the program (AsProgram): each
// directory's search permission is checked for it.
func (l *Lookup) Open(flags int) (int, unix.Errno) {
	how := &unix.OpenHow{Flags: uint64(unix.O_PATH | unix.O_CLOEXEC | flags), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(l.root, l.path, how)
	for i := 0; err == unix.EAGAIN && i < 8; i++ {
		// A rename or mount ran while ".." was being resolved: again.
		fd, err = unix.Openat2(l.root, l.path, how)
	}
	if err != nil {
		return -1, errnoOf(err)
	}
	return fd, 0
}

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}
