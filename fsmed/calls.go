package fsmed

import (
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/deputy"
	"sandbox-executable/seccomp"
)

// Operations, each call normalized to its *at form.
const (
	opOpen = iota
	opMkdir
	opMknod
	opRename
	opUnlink
	opSymlink
	opLink
	opTruncate
)

// call is a mediated call's arguments, as the registers had them.
type call struct {
	op     int
	name   string
	dirfd  [2]int
	path   [2]uint64 // addresses of the path arguments (one, or two)
	flags  uint64    // open, renameat2, unlinkat or linkat flags
	mode   uint32
	dev    uint64
	target uint64 // symlink's target
	length int64  // truncate's
	// openat2's struct open_how and its size.
	how, howSize uint64
}

// decode normalizes the call c names; false for one this package does not
// mediate.
func decode(c *seccomp.Call) (call, bool) {
	a := c.Args
	fd := func(i int) int { return int(int32(a[i])) }
	cwd := unix.AT_FDCWD
	switch int64(c.Nr) {
	case unix.SYS_OPENAT:
		return call{op: opOpen, name: "openat", dirfd: [2]int{fd(0)}, path: [2]uint64{a[1]}, flags: a[2], mode: uint32(a[3])}, true
	case unix.SYS_OPENAT2:
		return call{op: opOpen, name: "openat2", dirfd: [2]int{fd(0)}, path: [2]uint64{a[1]}, how: a[2], howSize: a[3]}, true
	case unix.SYS_MKDIRAT:
		return call{op: opMkdir, name: "mkdirat", dirfd: [2]int{fd(0)}, path: [2]uint64{a[1]}, mode: uint32(a[2])}, true
	case unix.SYS_MKNODAT:
		return call{op: opMknod, name: "mknodat", dirfd: [2]int{fd(0)}, path: [2]uint64{a[1]}, mode: uint32(a[2]), dev: a[3]}, true
	case unix.SYS_RENAMEAT:
		return call{op: opRename, name: "renameat", dirfd: [2]int{fd(0), fd(2)}, path: [2]uint64{a[1], a[3]}}, true
	case unix.SYS_RENAMEAT2:
		return call{op: opRename, name: "renameat2", dirfd: [2]int{fd(0), fd(2)}, path: [2]uint64{a[1], a[3]}, flags: a[4]}, true
	case unix.SYS_UNLINKAT:
		return call{op: opUnlink, name: "unlinkat", dirfd: [2]int{fd(0)}, path: [2]uint64{a[1]}, flags: a[2]}, true
	case unix.SYS_SYMLINKAT:
		return call{op: opSymlink, name: "symlinkat", target: a[0], dirfd: [2]int{fd(1)}, path: [2]uint64{a[2]}}, true
	case unix.SYS_LINKAT:
		return call{op: opLink, name: "linkat", dirfd: [2]int{fd(0), fd(2)}, path: [2]uint64{a[1], a[3]}, flags: a[4]}, true
	case unix.SYS_TRUNCATE:
		return call{op: opTruncate, name: "truncate", dirfd: [2]int{cwd}, path: [2]uint64{a[0]}, length: int64(a[1])}, true
	}
	return legacy(c)
}

// maxPath is PATH_MAX less its NUL: the longest path the kernel copies in.
const maxPath = unix.PathMax - 1

// side is one path of a call, looked up: the parent directory (an O_PATH
// descriptor of the supervisor's), the last name as the program gave it
// (trailing slashes kept, for the kernel to judge) and without them, and
// where the parent lies.
type side struct {
	given  string
	parent int
	name   string
	bare   string
	place  place
	dir    *Dir
}

func (s *side) close() {
	if s != nil && s.parent >= 0 {
		unix.Close(s.parent)
	}
}

// answer is what a call gets: a value or an errno, or "let the kernel do
// it" (cont).
type answer struct {
	val   int64
	errno unix.Errno
	cont  bool
}

var carryOn = answer{cont: true}

func fail(e unix.Errno) answer { return answer{errno: e} }

// Mediate carries out c (a seccomp.Mediator).
func (m *Mediator) Mediate(c *seccomp.Call) (int64, unix.Errno) {
	a := m.mediate(c)
	if a.cont {
		c.Continue()
	}
	return a.val, a.errno
}

func (m *Mediator) mediate(c *seccomp.Call) answer {
	cl, ok := decode(c)
	if !ok {
		return carryOn
	}
	m.mu.Lock()
	if m.st == nil && !m.failed {
		st, err := m.setUp(c)
		if err != nil && err != unix.ESRCH { // a caller gone: the next one tries again
			m.failed, m.err = true, err
		}
		m.st = st
	}
	st := m.st
	m.mu.Unlock()
	if st == nil {
		return carryOn
	}
	tid := int(c.Pid)
	switch cl.op {
	case opOpen:
		return m.open(c, st, tid, cl)
	case opTruncate:
		return m.truncate(c, st, tid, cl)
	}
	n := 1
	if cl.op == opRename || cl.op == opLink {
		n = 2
	}
	if cl.op == opLink && cl.flags&unix.AT_EMPTY_PATH != 0 {
		return carryOn // a descriptor, not a name: the kernel decides
	}
	var sides [2]*side
	defer func() { sides[0].close(); sides[1].close() }()
	for i := 0; i < n; i++ {
		s, a, done := m.lookUp(c, st, tid, cl.dirfd[i], cl.path[i], false)
		if done {
			return a
		}
		sides[i] = s
	}
	// Which names are taken away, made, or both (an exchange).
	for i := 0; i < n; i++ {
		s := sides[i]
		if s.place == top && s.dir.protects(s.bare) {
			if makes(cl.op, i) && s.exists() {
				return fail(unix.EEXIST) // the kernel's answer, before any check of rights
			}
			return m.refuse(c, cl, s)
		}
	}
	mediated := false
	for i := 0; i < n; i++ {
		switch sides[i].place {
		case protected:
			return carryOn // the program's rules refuse it
		case top, managed:
			mediated = true
		}
	}
	if !mediated {
		return carryOn
	}
	if errno, why := gitRefusal(cl, sides[:n]); errno != 0 {
		return m.refuseWith(c, cl, sides[0], errno, why)
	}
	var target string
	if cl.op == opSymlink {
		t, errno := deputy.ReadString(tid, cl.target, maxPath)
		if errno != 0 {
			return fail(errno)
		}
		target = t
	}
	s0, s1 := sides[0], sides[1]
	var perm uint32
	var fix bool
	if cl.op == opMkdir || cl.op == opMknod {
		perm, fix = st.modeFor(tid, s0.parent, cl.mode&0o7777)
	}
	if !c.Valid() {
		return fail(unix.ESRCH)
	}
	var err error
	follow := false
	st.thread.Do(func() {
		switch cl.op {
		case opMkdir:
			err = unix.Mkdirat(s0.parent, s0.name, perm)
			if err == nil && fix {
				fixMode(s0.parent, s0.name, perm)
			}
		case opMknod:
			err = unix.Mknodat(s0.parent, s0.name, cl.mode&unix.S_IFMT|perm, int(cl.dev))
			if err == nil && fix {
				fixMode(s0.parent, s0.name, perm)
			}
		case opUnlink:
			st.forget(s0.parent, s0.bare)
			err = unix.Unlinkat(s0.parent, s0.name, int(cl.flags&unix.AT_REMOVEDIR))
		case opSymlink:
			err = unix.Symlinkat(target, s0.parent, s0.name)
		case opRename:
			if cl.flags&unix.RENAME_EXCHANGE == 0 {
				st.forget(s1.parent, s1.bare)
			}
			err = unix.Renameat2(s0.parent, s0.name, s1.parent, s1.name, uint(cl.flags))
		case opLink:
			// The thread's rights cover the whole root, protected
			// names included: it never follows a link to what it
			// links (a link to .git/config would give the program a
			// writable name for it). A symbolic link to be followed
			// is the kernel's to follow, as the program's; one put
			// in place after this look is linked itself.
			var pre unix.Stat_t
			if cl.flags&unix.AT_SYMLINK_FOLLOW != 0 && unix.Fstatat(s0.parent, s0.bare, &pre, unix.AT_SYMLINK_NOFOLLOW) == nil &&
				pre.Mode&unix.S_IFMT == unix.S_IFLNK {
				follow = true
				return
			}
			err = unix.Linkat(s0.parent, s0.name, s1.parent, s1.name, 0)
		}
	})
	if follow {
		return carryOn
	}
	if err != nil {
		return fail(errnoOf(err))
	}
	return answer{}
}

// lookUp finds the parent of the path at addr (relative to dirfd) and
// where it lies. whole looks the whole path up as the directory (an
// O_TMPFILE open). done says the call is answered with a.
func (m *Mediator) lookUp(c *seccomp.Call, st *state, tid, dirfd int, addr uint64, whole bool) (s *side, a answer, done bool) {
	path, errno := deputy.ReadString(tid, addr, maxPath)
	if errno != 0 {
		return nil, fail(errno), true
	}
	if path == "" {
		return nil, fail(unix.ENOENT), true
	}
	s = &side{given: path, parent: -1}
	dir, name := path, ""
	if !whole {
		bare := strings.TrimRight(path, "/")
		if bare == "" {
			return nil, carryOn, true // "/": the kernel answers
		}
		i := strings.LastIndexByte(bare, '/')
		dir, name, s.bare = path[:i+1], path[i+1:], bare[i+1:]
		if s.bare == "." || s.bare == ".." {
			return nil, carryOn, true // no entry of its own: the kernel answers
		}
	}
	s.name = name
	var fd int
	if dir == "" {
		// The directory the program named by descriptor (or its working
		// directory) itself: no lookup.
		link := "/proc/" + strconv.Itoa(tid) + "/cwd"
		if dirfd != unix.AT_FDCWD {
			if dirfd < 0 {
				return nil, fail(unix.EBADF), true
			}
			link = "/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(dirfd)
		}
		var err error
		fd, err = unix.Open(link, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		switch {
		case err == unix.ENOENT && dirfd != unix.AT_FDCWD:
			return nil, fail(unix.EBADF), true
		case err != nil:
			return nil, fail(errnoOf(err)), true
		}
	} else {
		l, errno := deputy.NewLookup(c.Valid, tid, dirfd, dir)
		if errno != 0 {
			return nil, fail(errno), true
		}
		errno = unix.EACCES
		ok := deputy.AsProgram(func() { fd, errno = l.Open(unix.O_DIRECTORY) })
		l.Close()
		if !ok {
			return nil, carryOn, true
		}
		if errno == unix.ELOOP {
			return nil, carryOn, true // a magic link: the kernel resolves it as the program's
		}
		if errno != 0 {
			return nil, fail(errno), true
		}
	}
	if !c.Valid() {
		unix.Close(fd)
		return nil, fail(unix.ESRCH), true
	}
	s.parent = fd
	s.place, s.dir = st.where(fd)
	return s, answer{}, false
}

// makes reports whether side i of an op is the name it makes (mkdir,
// mknod, symlink, and link's second), which the kernel refuses with EEXIST
// when it is taken, whatever the caller's rights.
func makes(op, i int) bool {
	switch op {
	case opMkdir, opMknod, opSymlink:
		return i == 0
	case opLink:
		return i == 1
	}
	return false
}

// exists reports whether s's name is taken (a link not followed).
func (s *side) exists() bool {
	var st unix.Stat_t
	return unix.Fstatat(s.parent, s.bare, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// refuse answers a call that would make, remove, rename or replace a
// protected name, and records it.
func (m *Mediator) refuse(c *seccomp.Call, cl call, s *side) answer {
	return m.refuseWith(c, cl, s, unix.EACCES, "a protected name of a writable root: it is never made, removed, renamed or replaced")
}

// refuseWith answers a call with errno, and records it with why.
func (m *Mediator) refuseWith(c *seccomp.Call, cl call, s *side, errno unix.Errno, why string) answer {
	if m.cfg.OnDenial != nil {
		dir := ""
		if s.dir != nil {
			dir = s.dir.Path
		}
		m.cfg.OnDenial(Denial{Time: time.Now(), Pid: int(c.Pid), Syscall: cl.name, Path: s.given, Dir: dir,
			Errno: unix.ErrnoName(errno), Reason: why})
	}
	return fail(errno)
}

// gitRefusal says why a mediated call is refused in a writable git
// directory (Dir.Git), 0 when it is not: a symbolic link, a FIFO, a
// socket or a device made there (git on the host would follow the link
// when it writes the file, or hang on the FIFO), or an entry renamed or
// linked between it and another directory (it could bring links along).
// The program's own rules withhold the same beneath the entries that were
// there at the start; these are the calls the Mediator would otherwise
// make for it with rights of its own.
func gitRefusal(cl call, sides []*side) (unix.Errno, string) {
	// A side beneath an entry granted at the start is in the git
	// directory too: the Mediator makes a rename whose other side it
	// mediates, with rights the program's rules withhold there.
	inGit := func(s *side) bool { return s.place != outside && s.place != protected && s.dir != nil && s.dir.Git }
	switch cl.op {
	case opSymlink:
		if inGit(sides[0]) {
			return unix.EACCES, "a symbolic link in a writable git directory: git on the host would write through it"
		}
	case opMknod:
		if t := cl.mode & unix.S_IFMT; inGit(sides[0]) && t != 0 && t != unix.S_IFREG {
			return unix.EACCES, "a FIFO, socket or device in a writable git directory"
		}
	case opRename, opLink:
		if !inGit(sides[0]) && !inGit(sides[1]) {
			break
		}
		var a, b unix.Stat_t
		if unix.Fstat(sides[0].parent, &a) != nil || unix.Fstat(sides[1].parent, &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
			return unix.EXDEV, "moved or linked into or out of a directory of a writable git directory: it could bring links along"
		}
	}
	return 0, ""
}

// fixMode gives an entry just made the permissions perm, where the
// supervisor's umask took more away than the program's: the set-group-ID
// bit a directory took from its parent stays, as the kernel gave it.
func fixMode(dir int, name string, perm uint32) {
	var now unix.Stat_t
	if unix.Fstatat(dir, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil {
		_ = unix.Fchmodat(dir, name, perm|now.Mode&unix.S_ISGID, 0)
	}
}

// openHow is struct open_how.
type openHow struct{ flags, mode, resolve uint64 }

func readHow(tid int, addr, size uint64) (openHow, unix.Errno) {
	if size < 24 {
		return openHow{}, unix.EINVAL
	}
	b, errno := deputy.Read(tid, addr, 24)
	if errno != 0 {
		return openHow{}, errno
	}
	e := binary.NativeEndian
	return openHow{e.Uint64(b), e.Uint64(b[8:]), e.Uint64(b[16:])}, 0
}
