package fsmed

import (
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/seccomp"
)

// writes reports whether an open with flags may create, truncate or write
// (what the filter sends here; openat2 comes whatever its flags).
func writes(flags uint64) bool {
	acc := flags & unix.O_ACCMODE
	return flags&(unix.O_CREAT|unix.O_TRUNC) != 0 || acc == unix.O_WRONLY || acc == unix.O_RDWR
}

// open carries out an open that may create, truncate or write, where the
// parent is a split directory or beneath an entry made during the run: the
// thread opens the file, and the program gets the descriptor.
func (m *Mediator) open(c *seccomp.Call, st *state, tid int, cl call) answer {
	flags, mode := cl.flags, cl.mode
	var resolve uint64
	if cl.name == "openat2" {
		how, errno := readHow(tid, cl.how, cl.howSize)
		if errno != 0 {
			return carryOn // the kernel reads it again, and answers
		}
		flags, mode, resolve = how.flags, uint32(how.mode), how.resolve
	}
	if !writes(flags) || flags&unix.O_PATH != 0 {
		return carryOn
	}
	tmpfile := flags&unix.O_TMPFILE == unix.O_TMPFILE
	s, a, done := m.lookUp(c, st, tid, cl.dirfd[0], cl.path[0], tmpfile)
	if done {
		return a
	}
	defer s.close()
	if resolve != 0 && (tmpfile || strings.Contains(strings.TrimRight(s.given, "/"), "/")) {
		// openat2's resolve rules over more than one name: the kernel
		// applies them, as the program (refused in a split directory).
		return carryOn
	}
	switch s.place {
	case top:
		if !tmpfile && s.dir.protects(s.bare) {
			if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL && s.exists() {
				return fail(unix.EEXIST) // the kernel's answer, before any check of rights
			}
			return m.refuse(c, cl, s)
		}
	case managed:
	default:
		return carryOn
	}
	create := flags&unix.O_CREAT != 0 || tmpfile
	want, fix := mode&0o7777, false
	if create {
		want, fix = st.modeFor(tid, s.parent, want)
	}
	if !c.Valid() {
		return fail(unix.ESRCH)
	}
	fd, missing, special := -1, false, false
	var err error
	st.thread.Do(func() {
		// A FIFO or a device is the kernel's to open, as the program:
		// opening one has effects of its own (a FIFO's reader sees a
		// writer come and go, and reads an end of file). O_NONBLOCK
		// keeps the supervisor from waiting on one that replaced the
		// name meanwhile, which the type check below then passes on.
		oflags := flags | unix.O_NONBLOCK | unix.O_CLOEXEC
		if tmpfile {
			fd, err = unix.Openat(s.parent, ".", int(oflags), want)
			return
		}
		var pre unix.Stat_t
		e := unix.Fstatat(s.parent, s.bare, &pre, unix.AT_SYMLINK_NOFOLLOW)
		missing = e == unix.ENOENT
		if t := pre.Mode & unix.S_IFMT; e == nil && t != unix.S_IFREG && t != unix.S_IFDIR && t != unix.S_IFLNK {
			special = true
			return
		}
		fd, err = unix.Openat2(s.parent, s.name, &unix.OpenHow{Flags: oflags, Mode: uint64(want),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err == nil && create && missing && fix {
			_ = unix.Fchmod(fd, want)
		}
	})
	switch {
	case special:
		return carryOn
	case err == unix.ELOOP && flags&unix.O_NOFOLLOW == 0 && resolve&unix.RESOLVE_NO_SYMLINKS == 0:
		// The last name is a symbolic link: the kernel follows it, as
		// the program, and its rules decide where it leads.
		return carryOn
	case err == unix.ENXIO:
		return carryOn // a FIFO without a reader: the program's open waits for one
	case err != nil:
		return fail(errnoOf(err))
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if unix.Fstat(fd, &fst) != nil {
		return fail(unix.EIO)
	}
	if t := fst.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
		return carryOn
	}
	if flags&unix.O_NONBLOCK == 0 {
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
		}
	}
	if errno := c.SendFD(fd, flags&unix.O_CLOEXEC != 0); errno != 0 {
		if create && missing && !tmpfile {
			st.thread.Do(func() { unmake(s.parent, s.name, &fst) })
		}
		return fail(errno)
	}
	return answer{}
}

// unmake removes the entry name of dir that an open which then failed (the
// program's table full: EMFILE) made, if it is still the file made: the
// kernel takes a descriptor before it makes anything, and a program that
// tries again once it has closed one must not find its O_EXCL file there.
func unmake(dir int, name string, made *unix.Stat_t) {
	var now unix.Stat_t
	if unix.Fstatat(dir, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && now.Dev == made.Dev && now.Ino == made.Ino {
		_ = unix.Unlinkat(dir, name, 0)
	}
}

// truncate carries out truncate(2) where the file lies in a split
// directory or beneath an entry made during the run.
func (m *Mediator) truncate(c *seccomp.Call, st *state, tid int, cl call) answer {
	s, a, done := m.lookUp(c, st, tid, cl.dirfd[0], cl.path[0], false)
	if done {
		return a
	}
	defer s.close()
	switch s.place {
	case top:
		if s.dir.protects(s.bare) {
			return m.refuse(c, cl, s)
		}
	case managed:
	default:
		return carryOn
	}
	if !c.Valid() {
		return fail(unix.ESRCH)
	}
	var err error
	follow := false
	st.thread.Do(func() {
		// Not a regular file (a FIFO's reader would see a writer come
		// and go): the kernel's to refuse, as open's are.
		var pre unix.Stat_t
		if e := unix.Fstatat(s.parent, s.bare, &pre, unix.AT_SYMLINK_NOFOLLOW); e == nil && pre.Mode&unix.S_IFMT != unix.S_IFREG {
			follow = true
			return
		}
		fd, e := unix.Openat2(s.parent, s.name, &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_NONBLOCK | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if e != nil {
			err, follow = e, e == unix.ELOOP || e == unix.ENXIO
			return
		}
		defer unix.Close(fd)
		var fst unix.Stat_t
		if err = unix.Fstat(fd, &fst); err != nil {
			return
		}
		if fst.Mode&unix.S_IFMT != unix.S_IFREG {
			err = unix.EINVAL
			return
		}
		err = unix.Ftruncate(fd, cl.length)
	})
	if follow {
		return carryOn
	}
	if err != nil {
		return fail(errnoOf(err))
	}
	return answer{}
}
