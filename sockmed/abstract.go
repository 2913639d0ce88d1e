package sockmed

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandbox-executable/seccomp"
)

// Abstract unix sockets where the host's network namespace is shared and
// the kernel cannot scope them for the supervisor (AbstractHeld). The
// kernel keeps one name per socket type: connect and send look the name up
// among the bound sockets of the caller's type, and the name stays bound
// to its socket for as long as that socket lives. So the supervisor finds
// the socket the kernel would look the name up as (sock_diag: for a stream
// or seqpacket type the listening one, whose accepted connections show the
// same name; for a datagram type the only one), takes it from a process of
// the sandbox that holds it (pidfd_getfd), checks on that very file that it
// is the socket (inode, type, name, listening), and holds it until the
// call is made: the call can then reach no other socket. Everything it
// goes by is what the kernel says, never a text a program can write into
// (an abstract name may hold any byte, a newline among them).

// Not in golang.org/x/sys/unix (linux/unix_diag.h).
const (
	udiagShowName = 0x1 // UDIAG_SHOW_NAME
	unixDiagName  = 0   // UNIX_DIAG_NAME
	tcpListen     = 10  // TCP_LISTEN, the state of a listening unix socket
)

// boundAbstract is what sock_diag says of an abstract name for one type.
type boundAbstract struct {
	// ino is the socket the kernel looks the name up as, 0 for none
	// (nothing bound, or a stream name bound by a socket that does not
	// listen: connect is refused either way).
	ino uint32
	// found: some socket of the type has the name.
	found bool
}

// diagAbstract asks sock_diag for the unix sockets of the supervisor's
// network namespace (the program's, where this mode applies) that have the
// abstract name (its bytes after the leading NUL) and the type typ.
func diagAbstract(name []byte, typ int) (boundAbstract, error) {
	var out boundAbstract
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return out, err
	}
	defer unix.Close(fd)
	// struct nlmsghdr, then struct unix_diag_req: family, protocol, pad,
	// states, ino, show, cookie[2].
	req := make([]byte, unix.NLMSG_HDRLEN+24)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], 1)
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = unix.AF_UNIX
	binary.NativeEndian.PutUint32(r[4:], ^uint32(0))
	binary.NativeEndian.PutUint32(r[12:], udiagShowName)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return out, err
	}
	want := append([]byte{0}, name...)
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return out, err
		}
		for b := buf[:n]; len(b) >= unix.NLMSG_HDRLEN; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return out, unix.EIO
			}
			data := b[unix.NLMSG_HDRLEN:l]
			switch binary.NativeEndian.Uint16(b[4:]) {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(data) >= 4 {
					if e := -int32(binary.NativeEndian.Uint32(data)); e > 0 {
						return out, unix.Errno(e)
					}
				}
				return out, unix.EIO
			}
			if ino, ok := matchDiag(data, want, typ); ok {
				out.found = true
				if ino != 0 {
					out.ino = ino
				}
			}
			b = b[min((l+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1), len(b)):]
		}
	}
}

// DiagError is the error sock_diag gives when asked for the unix sockets of
// this network namespace (nil when it answers). Without unix_diag (a module
// the kernel loads on demand; a guest or container may not find it) every
// abstract name is refused where the mediation decides: doctor says so.
func DiagError() error {
	_, err := diagAbstract(nil, unix.SOCK_STREAM)
	return err
}

// matchDiag reads one struct unix_diag_msg (family, type, state, pad, ino,
// cookie[2], then attributes) and reports whether it is a socket of type
// typ named want exactly, and its inode when the kernel would look the name
// up as it (any socket of a datagram type; a listening one of the others).
func matchDiag(b, want []byte, typ int) (uint32, bool) {
	const head = 16
	if len(b) < head || int(b[1]) != typ {
		return 0, false
	}
	state, ino := b[2], binary.NativeEndian.Uint32(b[4:])
	for a := b[head:]; len(a) >= unix.SizeofRtAttr; {
		l := int(binary.NativeEndian.Uint16(a))
		if l < unix.SizeofRtAttr || l > len(a) {
			return 0, false
		}
		if binary.NativeEndian.Uint16(a[2:]) == unixDiagName {
			if !bytes.Equal(a[unix.SizeofRtAttr:l], want) {
				return 0, false
			}
			if typ == unix.SOCK_DGRAM || state == tcpListen {
				return ino, true
			}
			return 0, true
		}
		a = a[min((l+3)&^3, len(a)):]
	}
	return 0, false
}

// hold returns a descriptor of the socket the program's connect or send on
// t to the abstract name (its bytes after the leading NUL) would reach,
// when a process of the sandbox holds it: the supervisor then holds it too
// until the call is made, so the name stays bound to it. A name nobody (or
// no listener) holds for t's type is ECONNREFUSED, what the kernel would
// say; one held outside the sandbox is EACCES, recorded.
func (m *Mediator) hold(c *seccomp.Call, t *task, name []byte) (int, unix.Errno) {
	b, err := diagAbstract(name, t.typ)
	if err != nil {
		return -1, m.deny(c, "@"+string(name), "", unix.EACCES,
			"abstract unix socket, and sock_diag cannot tell the sandbox's from the host's: "+err.Error())
	}
	if b.ino == 0 {
		return -1, unix.ECONNREFUSED
	}
	if fd := m.takeFromSandbox(c, t, b.ino, name); fd >= 0 {
		return fd, 0
	}
	if !c.Valid() {
		return -1, unix.ESRCH
	}
	return -1, m.deny(c, "@"+string(name), "", unix.EACCES,
		"abstract unix socket bound outside the sandbox (the host's network namespace is shared)")
}

// takeFromSandbox finds a process in the PID namespace of the calling
// thread (the sandbox's) that holds socket inode ino, takes that socket
// and returns it once it is checked to be the socket named name that
// connects of t's type reach; -1 when none is.
func (m *Mediator) takeFromSandbox(c *seccomp.Call, t *task, ino uint32, name []byte) int {
	if m.cfg.Members == nil {
		return -1
	}
	ns, err := os.Readlink("/proc/" + strconv.Itoa(t.pid) + "/ns/pid")
	if err != nil || !c.Valid() {
		return -1
	}
	link := "socket:[" + strconv.FormatUint(uint64(ino), 10) + "]"
	for _, pid := range m.cfg.Members() {
		if fd := takeFrom(pid, ns, link); fd >= 0 {
			if isBoundSocket(fd, ino, t.typ, name) {
				return fd
			}
			unix.Close(fd)
		}
	}
	return -1
}

// takeFrom returns a descriptor of the file process pid has as link
// (readlink of /proc/PID/fd/N), when pid is a process of PID namespace ns,
// or -1.
func takeFrom(pid int, ns, link string) int {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	defer unix.Close(pidfd)
	dir := "/proc/" + strconv.Itoa(pid)
	if l, err := os.Readlink(dir + "/ns/pid"); err != nil || l != ns {
		return -1
	}
	// Alive after that read, the pidfd's process is the one /proc/PID
	// showed: a pid is not reused while its process exists.
	if unix.PidfdSendSignal(pidfd, 0, nil, 0) != nil {
		return -1
	}
	d, err := os.Open(dir + "/fd")
	if err != nil {
		return -1
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if l, err := os.Readlink(dir + "/fd/" + n); err != nil || l != link {
			continue
		}
		num, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		// The number may name another file by now: the caller checks
		// the one it got.
		if fd, err := unix.PidfdGetfd(pidfd, num, 0); err == nil {
			return fd
		}
	}
	return -1
}

// isBoundSocket reports whether fd is unix socket ino of type typ, bound
// to the abstract name, and, for a type with connections, listening: the
// socket the kernel looks the name up as for that type while it lives.
func isBoundSocket(fd int, ino uint32, typ int, name []byte) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Ino != uint64(ino) {
		return false
	}
	if d, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || d != unix.AF_UNIX {
		return false
	}
	if got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || got != typ {
		return false
	}
	if typ != unix.SOCK_DGRAM {
		if l, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || l != 1 {
			return false
		}
	}
	// The name as the kernel has it, every byte (x/sys's Getsockname
	// would end it at a NUL).
	var sa unix.RawSockaddrUnix
	l := uint32(unsafe.Sizeof(sa))
	if _, _, e := unix.Syscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l))); e != 0 {
		return false
	}
	const pathOff = 2
	if l < pathOff+1 || int(l)-pathOff > len(sa.Path) || sa.Path[0] != 0 {
		return false
	}
	got := unsafe.Slice((*byte)(unsafe.Pointer(&sa.Path[1])), int(l)-pathOff-1)
	return bytes.Equal(got, name)
}
