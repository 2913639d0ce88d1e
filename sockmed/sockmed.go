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
//
// The supervisor makes such a call with no more authority than the
// program has (the deputy rule). It looks the pathname up and makes the
// call on a thread whose effective capabilities are emptied for it
// (package deputy), so the kernel checks the socket file's permissions, a
// privileged socket option or a netlink destination as it would for the
// capability-less program; it forwards only the ancillary data it decided
// to (control.go); and where the host's network namespace is shared, the
// kernel's own Landlock scoping decides which abstract sockets are reached
// (the supervisor holds a domain the program's nests in: spawn's scope.c),
// or, on a kernel without scoping, the supervisor reaches an abstract name
// only while it holds the sandbox's socket bound to it (abstract.go).
package sockmed

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/deputy"
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
	// AbstractHeld connects to an abstract name only while the
	// supervisor holds the socket the kernel would look up by it, taken
	// from a process of the sandbox (Config.Members): the host's network
	// namespace is shared. Landlock's scoping cannot decide a call the
	// supervisor makes: it would take a domain the program's nests in,
	// and a layer that handles no filesystem right denies every
	// cross-directory rename beneath it (EXDEV) while one that handles
	// them denies the init's mounts. The socket is found by what the
	// kernel says (sock_diag: inode, type, state; the holder's descriptor
	// table), and held, the name stays bound to it until the call is
	// made.
	AbstractHeld
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
	// Abstract says how abstract addresses are handled; Members lists
	// processes that may be the sandbox's (AbstractHeld: those in the
	// caller's PID namespace are).
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

// dest is where a call goes. Its address is final once settled, on the
// thread that makes the call (package deputy): a pathname is looked up there,
// without the supervisor's capabilities, and replaced by /proc/self/fd/N
// of an O_PATH descriptor of the socket file checked.
type dest struct {
	addr []byte
	// A pathname still to look up: the name as the program gave it, and
	// where to look (lookup).
	given string
	look  *deputy.Lookup
	// pathFD is the O_PATH descriptor addr names, or -1.
	pathFD int
	// abstract is an abstract name as the program gave it ("@name"), for
	// a refusal to record; held the sandbox's socket bound to it, held
	// until the call is made (AbstractHeld), or -1.
	abstract string
	held     int
}

func (d *dest) close() {
	if d == nil {
		return
	}
	if d.pathFD >= 0 {
		unix.Close(d.pathFD)
	}
	if d.held >= 0 {
		unix.Close(d.held)
	}
	d.look.Close()
}

// run makes the call f as the program would (deputy.AsProgram: no effective
// capability), once the destination d is settled (nil: none). wait says f
// may block (a blocking socket): the watcher then receives on another
// goroutine.
func (m *Mediator) run(c *seccomp.Call, d *dest, wait bool, f func() (int64, unix.Errno)) (int64, unix.Errno) {
	if wait {
		c.Background()
	}
	var n int64
	errno := unix.EACCES
	ok := deputy.AsProgram(func() {
		if errno = m.settle(c, d); errno == 0 {
			n, errno = f()
		}
	})
	if !ok {
		return 0, m.deny(c, "", "", unix.EACCES, "the supervisor could not drop its capabilities for the call")
	}
	return n, errno
}

// destination decides where addr (as the program gave it for its socket t)
// may go. connects says the call connects (connect, or a send with
// MSG_FASTOPEN), for Landlock's TCP port rule.
func (m *Mediator) destination(c *seccomp.Call, t *task, addr []byte, connects bool) (*dest, unix.Errno) {
	d := &dest{addr: addr, pathFD: -1, held: -1}
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
			d.abstract = "@" + string(path[1:])
			if m.cfg.Abstract != AbstractHeld {
				return d, 0
			}
			fd, errno := m.hold(c, t, path[1:])
			if errno != 0 {
				return nil, errno
			}
			d.held = fd
			return d, 0
		}
		if i := bytes.IndexByte(path, 0); i >= 0 {
			path = path[:i]
		}
		look, errno := deputy.NewLookup(c.Valid, t.pid, unix.AT_FDCWD, string(path))
		if errno != 0 {
			return nil, errno
		}
		d.given, d.look = string(path), look
		return d, 0
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

// settle looks d's pathname up, as the program would (on the thread that
// makes the call, without the supervisor's capabilities: the kernel checks
// every directory's search permission, and then the socket file's write
// permission at the call, as for the program), checks the socket file it
// leads to and makes d's address name that very file. Nothing to do for
// any other destination.
func (m *Mediator) settle(c *seccomp.Call, d *dest) unix.Errno {
	if d == nil || d.look == nil || d.pathFD >= 0 {
		return 0
	}
	fd, where, errno := openLookup(d.look)
	if errno != 0 {
		return errno
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return errnoOf(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(fd)
		return unix.ECONNREFUSED // what connect says of a file that is not a socket
	}
	if !m.reachable(where) {
		unix.Close(fd)
		return m.deny(c, d.given, where, unix.EACCES, "unix socket outside the writable roots")
	}
	if st.Nlink != 1 {
		unix.Close(fd)
		return m.deny(c, d.given, where, unix.EACCES, "unix socket with more than one name: another may lie outside the writable roots")
	}
	sun := make([]byte, 2, 2+len("/proc/self/fd/")+10+1)
	binary.NativeEndian.PutUint16(sun, unix.AF_UNIX)
	sun = append(sun, "/proc/self/fd/"+strconv.Itoa(fd)...)
	sun = append(sun, 0)
	d.addr, d.pathFD = sun, fd
	return 0
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

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}
