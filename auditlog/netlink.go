package auditlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// message is one netlink message of the audit socket: its type and text.
type message struct {
	typ  uint16
	data []byte
}

// errOverrun is a read that found the socket's buffer had overflowed: the
// kernel dropped records for this socket.
var errOverrun = errors.New("auditlog: the socket's buffer overflowed: records were lost")

// socket reads the kernel's audit records from a netlink socket bound to
// the multicast group (the runner's: spawn.AuditLog).
type socket struct {
	f   *os.File
	buf []byte
}

// newSocket takes fd, a non-blocking audit netlink socket.
func newSocket(fd int) *socket {
	return &socket{f: os.NewFile(uintptr(fd), "audit log"), buf: make([]byte, 1<<16)}
}

// read returns the messages of the next datagram the kernel sent, waiting
// until deadline (os.ErrDeadlineExceeded when nothing came).
func (s *socket) read(deadline time.Time) ([]message, error) {
	rc, err := s.f.SyscallConn()
	if err != nil {
		return nil, err
	}
	if err := s.f.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	var n int
	var from unix.Sockaddr
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, from, rerr = unix.Recvfrom(int(fd), s.buf, unix.MSG_DONTWAIT)
		return rerr != unix.EAGAIN
	})
	if err != nil {
		return nil, err
	}
	if rerr == unix.ENOBUFS {
		return nil, errOverrun
	}
	if rerr != nil {
		return nil, fmt.Errorf("auditlog: read: %w", rerr)
	}
	// Only the kernel (port 0) sends to the group.
	if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
		return nil, nil
	}
	return splitMessages(s.buf[:n])
}

func (s *socket) close() { s.f.Close() }

// splitMessages splits a datagram into its netlink messages.
func splitMessages(b []byte) ([]message, error) {
	var out []message
	for len(b) > 0 {
		if len(b) < unix.NLMSG_HDRLEN {
			return out, errors.New("auditlog: a truncated netlink header")
		}
		n := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		if n < unix.NLMSG_HDRLEN || n > len(b) {
			return out, fmt.Errorf("auditlog: a netlink message of %d bytes in %d", n, len(b))
		}
		out = append(out, message{typ: typ, data: b[unix.NLMSG_HDRLEN:n]})
		next := (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if next > len(b) {
			break
		}
		b = b[next:]
	}
	return out, nil
}

// Status is the kernel's audit state (struct audit_status), as AUDIT_GET
// answers it.
type Status struct {
	// Enabled: 0 off (Landlock writes no record), 1 on, 2 on and locked.
	Enabled uint32
	// Pid is the audit daemon's, 0 for none; RateLimit the records per
	// second beyond which the kernel drops them (0: none); BacklogLimit
	// how many it queues; Lost how many it has dropped since boot;
	// Backlog how many are queued now.
	Pid, RateLimit, BacklogLimit, Lost, Backlog uint32
}

const (
	auditGet   = 1000 // AUDIT_GET
	auditUser  = 1005 // AUDIT_USER
	statusSize = 40   // the fields of struct audit_status Status reads, and a few more
)

// request sends the kernel one audit netlink request of type typ and
// returns its socket, ready for the answer (1 s at most); the caller
// closes it. what names the request in errors.
func request(what string, typ uint16, payload []byte) (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return -1, fmt.Errorf("%s: socket: %w", what, err)
	}
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", what, err)
	}
	req := make([]byte, unix.NLMSG_HDRLEN+len(payload))
	binary.NativeEndian.PutUint32(req[0:4], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:6], typ)
	binary.NativeEndian.PutUint16(req[6:8], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(req[8:12], 1)
	copy(req[unix.NLMSG_HDRLEN:], payload)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", what, err)
	}
	return fd, nil
}

// ackError is the error an NLMSG_ERROR message carries (nil for an ack).
func ackError(m message) error {
	if len(m.data) < 4 {
		return errors.New("a short error message")
	}
	if e := int32(binary.NativeEndian.Uint32(m.data[0:4])); e != 0 {
		return unix.Errno(-e)
	}
	return nil
}

// sendMark asks the kernel to log text as a user message (AUDIT_USER). The
// kernel sends its records in the order they were queued, so the mark
// comes after every record queued before it: once a reader has seen it,
// it has seen them. It needs CAP_AUDIT_WRITE in the initial user
// namespace, and an audit that is on.
func sendMark(text string) error {
	fd, err := request("audit mark", auditUser, append([]byte(text), 0))
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := make([]byte, 1<<12)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("audit mark: %w", err)
	}
	msgs, err := splitMessages(buf[:n])
	if err != nil {
		return fmt.Errorf("audit mark: %w", err)
	}
	for _, m := range msgs {
		if m.typ == unix.NLMSG_ERROR {
			if err := ackError(m); err != nil {
				return fmt.Errorf("audit mark: %w", err)
			}
			return nil
		}
	}
	return errors.New("audit mark: no answer")
}

// QueryStatus asks the kernel for its audit state. It needs
// CAP_AUDIT_CONTROL and the initial PID namespace (the kernel's rule for
// AUDIT_GET); the error says which failed.
func QueryStatus() (Status, error) {
	fd, err := request("audit status", auditGet, nil)
	if err != nil {
		return Status{}, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 1<<13)
	for range 4 {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return Status{}, fmt.Errorf("audit status: %w", err)
		}
		msgs, err := splitMessages(buf[:n])
		if err != nil {
			return Status{}, fmt.Errorf("audit status: %w", err)
		}
		for _, m := range msgs {
			switch m.typ {
			case unix.NLMSG_ERROR:
				if err := ackError(m); err != nil {
					return Status{}, fmt.Errorf("audit status: %w", err)
				}
			case auditGet:
				if len(m.data) < statusSize {
					return Status{}, errors.New("audit status: a short answer")
				}
				u := func(i int) uint32 { return binary.NativeEndian.Uint32(m.data[4*i:]) }
				// mask, enabled, failure, pid, rate_limit,
				// backlog_limit, lost, backlog.
				return Status{Enabled: u(1), Pid: u(3), RateLimit: u(4), BacklogLimit: u(5), Lost: u(6), Backlog: u(7)}, nil
			}
		}
	}
	return Status{}, errors.New("audit status: no answer")
}
