// Package sockmed carries out, in the supervisor, the socket calls the
// seccomp filter sends it instead of letting the kernel run them in the
// program: connect, sendto with an address, sendmsg and sendmmsg. A unix
// socket is reached by pathname only when the socket, found in the program's
// own view of the filesystem, lies inside a writable root of the policy;
// everything else is refused with EACCES and recorded. The rule holds
// however the socket is named (a relative name, a hard link, a renamed
// directory), whenever it was bound, and in whatever network namespace:
// it looks at the file the name leads to when the call is made, not at a
// list made at start.
//
// The supervisor never lets the kernel continue such a call in the program
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the program could change the address
// in its memory, or the socket behind the descriptor number, between the
// check and the call. Instead it takes the program's socket itself
// (pidfd_getfd: the same open file), reads the address and the data once
// from the program's memory, and makes the call on that socket with its own
// copy: a checked pathname is replaced by /proc/self/fd/N of an O_PATH
// descriptor of the very socket file it checked. The program's descriptor
// is then connected, or the data sent, exactly as if the program had done
// it, and the program gets the call's own result (0, EINPROGRESS, a byte
// count, ECONNREFUSED...).
package sockmed

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
	"sandbox-executable/seccomp"
)

// AbstractMode says how abstract unix addresses (a name that starts with a
// NUL byte, in no filesystem) are handled.
type AbstractMode int

const (
	// AbstractDirect connects as asked: the program's network namespace
	// holds no abstract socket but its own.
	AbstractDirect AbstractMode = iota
	// AbstractOwned connects only to an abstract name bound by a socket
	// that a process of the sandbox holds (Config.Members): the host's
	// network namespace is shared, and a connect made by the supervisor is
	// not subject to the program's Landlock scoping, which would tell the
	// sandbox's abstract sockets from the host's.
	AbstractOwned
)

// Config is what a Mediator enforces.
type Config struct {
	// Roots are the directories (canonical paths) beneath which the
	// program's unix sockets may be reached by pathname: the writable
	// roots and the private temp dir.
	Roots []string
	// Denied are paths beneath the roots where no socket is reached (the
	// write- and read-denied paths).
	Denied []string
	// Abstract says how abstract addresses are handled; Members lists the
	// sandbox's processes (AbstractOwned).
	Abstract AbstractMode
	Members  func() []int `json:"-"`
	// TCPPorts, when TCPRestricted, are the only TCP ports connect may
	// reach: Landlock's rule for the program (the degraded allowlist),
	// which the supervisor's own connect would not be subject to.
	TCPRestricted bool
	TCPPorts      []uint16
	// UDPDenied: Landlock refuses the program every UDP connect and send
	// to an address (ABI 10 with no UDP rule: the degraded allowlist),
	// which the supervisor's own calls would not be subject to.
	UDPDenied bool
	// CheckMode is set when the supervisor has privileges the program
	// lacks (root with capabilities, a capability-less program): a socket
	// file is then connected only when its mode bits let UID or one of
	// GIDs write it, as the kernel would check for the program.
	CheckMode bool
	UID       int
	GIDs      []int
	// OnDenial receives each refusal (from the mediating goroutines,
	// possibly at once).
	OnDenial func(Denial) `json:"-"`
}

// Denial is one call the mediator refused.
type Denial struct {
	Time    time.Time
	Pid     int
	Syscall string
	// Address is the address as the program gave it: a path, or "@name"
	// for an abstract one; Resolved is where a path led in the program's
	// view.
	Address  string
	Resolved string
	Errno    string
	Reason   string
}

// Mediator carries out mediated calls under a Config.
type Mediator struct {
	cfg Config
}

// New returns a Mediator for cfg.
func New(cfg Config) *Mediator { return &Mediator{cfg: cfg} }

// Syscalls are the calls a Mediator carries out, for the filter's rules.
var Syscalls = []string{"connect", "sendto", "sendmsg", "sendmmsg"}

// Mediate carries out c (a seccomp.Mediator).
func (m *Mediator) Mediate(c *seccomp.Call) (int64, unix.Errno) {
	t, errno := m.open(c)
	if errno != 0 {
		return 0, errno
	}
	defer t.close()
	switch int64(c.Nr) {
	case unix.SYS_CONNECT:
		return m.connect(c, t)
	case unix.SYS_SENDTO:
		return m.sendto(c, t)
	case unix.SYS_SENDMSG:
		return m.sendmsg(c, t)
	case unix.SYS_SENDMMSG:
		return m.sendmmsg(c, t)
	}
	return 0, unix.ENOSYS
}

// syscallName names a mediated call for denials.
func syscallName(nr int32) string {
	switch int64(nr) {
	case unix.SYS_CONNECT:
		return "connect"
	case unix.SYS_SENDTO:
		return "sendto"
	case unix.SYS_SENDMSG:
		return "sendmsg"
	case unix.SYS_SENDMMSG:
		return "sendmmsg"
	}
	return strconv.Itoa(int(nr))
}

// deny records a refusal and returns its errno.
func (m *Mediator) deny(c *seccomp.Call, addr, resolved string, errno unix.Errno, reason string) unix.Errno {
	if m.cfg.OnDenial != nil {
		m.cfg.OnDenial(Denial{Time: time.Now(), Pid: int(c.Pid), Syscall: syscallName(c.Nr), Address: addr, Resolved: resolved,
			Errno: unix.ErrnoName(errno), Reason: reason})
	}
	return errno
}

// maxAddr is the largest address a socket call takes (sockaddr_storage);
// sizeofSockaddrUn the largest unix one.
const (
	maxAddr          = 128
	sizeofSockaddrUn = 110
)

// dest is where a call goes: the address to give the kernel, possibly a
// /proc/self/fd/N path standing for a checked socket file.
type dest struct {
	addr   []byte
	pathFD int // the O_PATH descriptor addr names, or -1
}

func (d *dest) close() {
	if d != nil && d.pathFD >= 0 {
		unix.Close(d.pathFD)
	}
}

// run makes the call f. wait says f may block (a blocking socket): the
// watcher then receives on another goroutine.
func (m *Mediator) run(c *seccomp.Call, wait bool, f func() (int64, unix.Errno)) (int64, unix.Errno) {
	if wait {
		c.Background()
	}
	return f()
}

// destination decides where addr (as the program gave it for its socket t)
// may go. connects says the call connects (connect, or a send with
// MSG_FASTOPEN), for Landlock's TCP port rule.
func (m *Mediator) destination(c *seccomp.Call, t *task, addr []byte, connects bool) (*dest, unix.Errno) {
	d := &dest{addr: addr, pathFD: -1}
	if len(addr) < 2 {
		return d, 0 // the kernel refuses it (or it is no address at all)
	}
	family := int(binary.NativeEndian.Uint16(addr))
	switch {
	case t.domain == unix.AF_UNIX && family == unix.AF_UNIX && len(addr) > 2:
		if len(addr) > sizeofSockaddrUn {
			return nil, unix.EINVAL // the kernel's answer
		}
		path := addr[2:]
		if path[0] == 0 {
			if m.cfg.Abstract == AbstractDirect {
				return d, 0
			}
			switch owned, bound := m.ownedAbstract(path[1:]); {
			case owned:
				return d, 0
			case !bound:
				return nil, unix.ECONNREFUSED // what connect says of a name nobody bound
			}
			return nil, m.deny(c, "@"+string(path[1:]), "", unix.EACCES,
				"abstract unix socket bound outside the sandbox (the host's network namespace is shared)")
		}
		if i := bytes.IndexByte(path, 0); i >= 0 {
			path = path[:i]
		}
		return m.pathname(c, t, string(path))
	case m.cfg.TCPRestricted && connects && t.tcp() && (family == unix.AF_INET || family == unix.AF_INET6) && len(addr) >= 4:
		port := binary.BigEndian.Uint16(addr[2:4])
		for _, p := range m.cfg.TCPPorts {
			if p == port {
				return d, 0
			}
		}
		// Landlock's answer for a TCP port the ruleset does not allow.
		return nil, m.deny(c, "port "+strconv.Itoa(int(port)), "", unix.EACCES, "TCP connect to a port the network mode does not allow")
	case m.cfg.UDPDenied && t.udp() && (family == unix.AF_INET || family == unix.AF_INET6) && len(addr) >= 4:
		port := binary.BigEndian.Uint16(addr[2:4])
		// Landlock's answer for UDP the ruleset does not allow.
		return nil, m.deny(c, "udp port "+strconv.Itoa(int(port)), "", unix.EACCES, "UDP, which the network mode does not allow")
	}
	return d, 0
}

// pathname checks the unix socket path names for the program t and
// returns a destination naming the very file checked.
func (m *Mediator) pathname(c *seccomp.Call, t *task, path string) (*dest, unix.Errno) {
	fd, where, errno := resolve(c, t.pid, path)
	if errno != 0 {
		return nil, errno
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, errnoOf(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return nil, unix.ECONNREFUSED // what connect says of a file that is not a socket
	}
	if !m.reachable(where) {
		unix.Close(fd)
		return nil, m.deny(c, path, where, unix.EACCES, "unix socket outside the writable roots")
	}
	if st.Nlink != 1 {
		unix.Close(fd)
		return nil, m.deny(c, path, where, unix.EACCES, "unix socket with more than one name: another may lie outside the writable roots")
	}
	if m.cfg.CheckMode && !m.writable(&st) {
		unix.Close(fd)
		return nil, unix.EACCES // the kernel's own answer to the program
	}
	sun := make([]byte, 2, 2+len("/proc/self/fd/")+10+1)
	binary.NativeEndian.PutUint16(sun, unix.AF_UNIX)
	sun = append(sun, "/proc/self/fd/"+strconv.Itoa(fd)...)
	sun = append(sun, 0)
	return &dest{addr: sun, pathFD: fd}, 0
}

// reachable reports whether a socket at where (in the program's view) may
// be connected to.
func (m *Mediator) reachable(where string) bool {
	for _, d := range m.cfg.Denied {
		if policy.Within(where, d) {
			return false
		}
	}
	for _, r := range m.cfg.Roots {
		if policy.Within(where, r) {
			return true
		}
	}
	return false
}

// writable reports whether the mode bits of st let the program write it.
func (m *Mediator) writable(st *unix.Stat_t) bool {
	switch {
	case int(st.Uid) == m.cfg.UID:
		return st.Mode&0o200 != 0
	case m.inGroup(int(st.Gid)):
		return st.Mode&0o020 != 0
	}
	return st.Mode&0o002 != 0
}

func (m *Mediator) inGroup(gid int) bool {
	for _, g := range m.cfg.GIDs {
		if g == gid {
			return true
		}
	}
	return false
}

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}
