package sockmed

import (
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandbox-executable/deputy"
	"sandbox-executable/seccomp"
)

// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd for the thread itself,
// whose file table pidfd_getfd then reads (a thread may have unshared it).
const pidfdThread = unix.O_EXCL

// task is the calling thread of a mediated call and the socket it names.
type task struct {
	pid   int
	pidfd int
	sock  int // the program's socket, as a descriptor of the supervisor's
	// The socket's family, type and protocol: fixed for its life.
	domain, typ, proto int
	// nonblock: the open file is O_NONBLOCK (as the supervisor's copy is:
	// one open file), so no call on it waits.
	nonblock bool
}

// open takes hold of c's thread and socket. The result is the caller's only
// once c.Valid() holds after it (the pid could have been reused before):
// open checks that itself.
func (m *Mediator) open(c *seccomp.Call) (*task, unix.Errno) {
	t := &task{pid: int(c.Pid), pidfd: -1, sock: -1}
	fd, err := unix.PidfdOpen(t.pid, pidfdThread)
	if err == unix.EINVAL {
		// Before 6.9, only a thread group leader has a pidfd: the group's
		// file table is the thread's unless it unshared it.
		fd, err = unix.PidfdOpen(tgid(t.pid), 0)
	}
	if err != nil {
		return nil, unix.ESRCH // gone: the answer is never read
	}
	t.pidfd = fd
	sock, err := unix.PidfdGetfd(t.pidfd, int(int32(c.Args[0])), 0)
	if err != nil {
		t.close()
		if err == unix.EBADF {
			return nil, unix.EBADF
		}
		return nil, m.deny(c, "", "", unix.EACCES, "the supervisor cannot take the program's socket: "+err.Error())
	}
	t.sock = sock
	if t.domain, err = unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil {
		t.close()
		if err == unix.ENOTSOCK {
			return nil, unix.ENOTSOCK
		}
		return nil, errnoOf(err)
	}
	if fl, err := unix.FcntlInt(uintptr(sock), unix.F_GETFL, 0); err == nil {
		t.nonblock = fl&unix.O_NONBLOCK != 0
	}
	t.typ, _ = unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	t.proto, _ = unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if !c.Valid() {
		t.close()
		return nil, unix.ESRCH
	}
	return t, 0
}

func (t *task) close() {
	if t.sock >= 0 {
		unix.Close(t.sock)
	}
	if t.pidfd >= 0 {
		unix.Close(t.pidfd)
	}
}

// tcp reports whether the socket is one Landlock's TCP rules apply to.
func (t *task) tcp() bool {
	return (t.domain == unix.AF_INET || t.domain == unix.AF_INET6) && t.typ == unix.SOCK_STREAM && t.proto == unix.IPPROTO_TCP
}

// udp reports whether the socket is one Landlock's UDP rules (ABI 10) apply
// to.
func (t *task) udp() bool {
	return (t.domain == unix.AF_INET || t.domain == unix.AF_INET6) && t.typ == unix.SOCK_DGRAM &&
		(t.proto == unix.IPPROTO_UDP || t.proto == 0)
}

// read copies n bytes at addr out of the thread's memory (nil for none).
func (t *task) read(addr uint64, n int) ([]byte, unix.Errno) { return deputy.Read(t.pid, addr, n) }

// write copies b into the thread's memory at addr.
func (t *task) write(addr uint64, b []byte) unix.Errno { return deputy.Write(t.pid, addr, b) }

// sigpipe sends SIGPIPE to the thread, as the kernel does to a sender on a
// broken stream without MSG_NOSIGNAL (the supervisor sends with it).
func (t *task) sigpipe() {
	const pidfdSignalThread = 1 // PIDFD_SIGNAL_THREAD
	if unix.PidfdSendSignal(t.pidfd, unix.SIGPIPE, nil, pidfdSignalThread) != nil {
		_ = unix.PidfdSendSignal(t.pidfd, unix.SIGPIPE, nil, 0)
	}
}

// tgid is the thread group of thread tid (tid itself when unknown).
func tgid(tid int) int {
	if st, err := readStatus(tid); err == nil && st.tgid > 0 {
		return st.tgid
	}
	return tid
}

// status is what the mediation reads of /proc/<tid>/status.
type status struct {
	tgid int
	// nsTgid is the thread group's id in its own PID namespace (the last
	// NStgid field): the pid the program knows itself by.
	nsTgid int32
	// uids and gids are the real, effective and saved ids.
	uids, gids [3]uint32
}

func (s *status) hasUID(u uint32) bool { return u == s.uids[0] || u == s.uids[1] || u == s.uids[2] }
func (s *status) hasGID(g uint32) bool { return g == s.gids[0] || g == s.gids[1] || g == s.gids[2] }

// readCreds reads thread tid's credentials.
func readCreds(tid int) (*status, error) {
	st, err := readStatus(tid)
	if err != nil {
		return nil, err
	}
	if st.nsTgid <= 0 {
		return nil, unix.EINVAL
	}
	return st, nil
}

// readStatus reads /proc/<tid>/status, a text the kernel writes (the
// program cannot put a line of its own in it: the only text it chooses
// there, its command name, is written with newlines escaped).
func readStatus(tid int) (*status, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return nil, err
	}
	none := [3]uint32{^uint32(0), ^uint32(0), ^uint32(0)} // no valid id: a line missing matches no claim
	st := &status{uids: none, gids: none}
	ids := func(v string, out *[3]uint32) {
		f := strings.Fields(v)
		for i := 0; i < 3 && i < len(f); i++ {
			if n, err := strconv.ParseUint(f[i], 10, 32); err == nil {
				out[i] = uint32(n)
			}
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "Tgid":
			st.tgid, _ = strconv.Atoi(strings.TrimSpace(v))
		case "NStgid":
			if f := strings.Fields(v); len(f) > 0 {
				if n, err := strconv.ParseInt(f[len(f)-1], 10, 32); err == nil {
					st.nsTgid = int32(n)
				}
			}
		case "Uid":
			ids(v, &st.uids)
		case "Gid":
			ids(v, &st.gids)
		}
	}
	return st, nil
}

// openLookup opens l's path as an O_PATH descriptor and says where that
// is, in the program's view.
func openLookup(l *deputy.Lookup) (int, string, unix.Errno) {
	fd, errno := l.Open(0)
	if errno != 0 {
		return -1, "", errno
	}
	where, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(where, "/") {
		unix.Close(fd)
		return -1, "", unix.EACCES
	}
	return fd, where, 0
}

// rawConnect is connect(2) with addr as bytes.
func rawConnect(fd int, addr []byte) (int64, unix.Errno) {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(p), uintptr(len(addr)))
	return 0, e
}
