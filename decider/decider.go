// Package decider is the resident decider's side of its socket: it accepts
// the requests runs send on a miss (spawn/decider.h has the format and what
// a run does with the answer), reads each into a Request, has it decided,
// and answers. Deciding is the caller's: package decider only checks who
// asks and what they sent.
package decider

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/spawn"
)

// The request's format, from spawn/decider.h.
const (
	magic      = spawn.DeciderMagic
	version    = spawn.DeciderVersion
	headerSize = spawn.DeciderHeaderSize
	// MaxRequest bounds a request's size.
	MaxRequest = spawn.DeciderMaxRequest
)

// ioTimeout bounds how long one request may take to arrive, and its
// answer to go out: the run waits as long at most.
const ioTimeout = spawn.DeciderWait

// Request is what a run carries that its decision depends on and the
// decider does not share with it: its arguments and environment, its
// RLIMIT_NOFILE as it started, its working directory and its standard
// descriptors.
type Request struct {
	Args                 []string
	Env                  []string
	NofileCur, NofileMax uint64
	// Cwd is the run's working directory (O_PATH), and Std its
	// descriptors 0, 1 and 2. Serve closes them after the decision.
	Cwd *os.File
	Std [3]*os.File
}

// Parse reads a request's bytes (not its descriptors). Every length is
// checked against what is left; no string may hold a NUL byte.
func Parse(b []byte) (*Request, error) {
	le := binary.LittleEndian
	if len(b) < headerSize || len(b) > MaxRequest {
		return nil, fmt.Errorf("request of %d bytes", len(b))
	}
	if le.Uint32(b) != magic || le.Uint32(b[4:]) != version {
		return nil, errors.New("not a request of this version")
	}
	if le.Uint32(b[8:]) != uint32(len(b)) || le.Uint32(b[12:]) != 0 {
		return nil, errors.New("size or reserved field wrong")
	}
	r := &Request{NofileCur: le.Uint64(b[16:]), NofileMax: le.Uint64(b[24:])}
	rest := b[headerSize:]
	var err error
	if r.Args, rest, err = strings32(rest); err != nil {
		return nil, fmt.Errorf("argv: %w", err)
	}
	if r.Env, rest, err = strings32(rest); err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the environment", len(rest))
	}
	if len(r.Args) == 0 {
		return nil, errors.New("argv is empty")
	}
	return r, nil
}

// strings32 reads a u32 count, then that many strings.
func strings32(b []byte) ([]string, []byte, error) {
	le := binary.LittleEndian
	if len(b) < 4 {
		return nil, nil, errors.New("truncated")
	}
	n := le.Uint32(b)
	b = b[4:]
	if uint64(n)*4 > uint64(len(b)) {
		return nil, nil, errors.New("count larger than the request")
	}
	out := make([]string, 0, n)
	for range n {
		if len(b) < 4 {
			return nil, nil, errors.New("truncated")
		}
		l := le.Uint32(b)
		b = b[4:]
		if uint64(l) > uint64(len(b)) {
			return nil, nil, errors.New("string longer than the request")
		}
		s := string(b[:l])
		if strings.IndexByte(s, 0) >= 0 {
			return nil, nil, errors.New("a string holds a NUL byte")
		}
		out = append(out, s)
		b = b[l:]
	}
	return out, b, nil
}

// Handler is what Serve does with a request.
type Handler struct {
	// Peer says whether the process whose /proc status file is status
	// may be answered: the resident decider answers only a process whose
	// credentials, capabilities, no_new_privs and seccomp filters are
	// its own (a sandboxed program has a filter more). It is a filter,
	// not a guarantee: the status is read by the sender's pid after its
	// connect. What a run does with an answer is safe whoever sent it.
	Peer func(status []byte) bool
	// Decide decides r and says whether it stored an entry.
	Decide func(r *Request) bool
}

// Serve answers the requests on l, one at a time, until l is closed. A
// request that is malformed, late, from another user or one h.Peer refuses
// is answered 'N' (or not at all) without a decision.
func Serve(l *net.UnixListener, h Handler) error {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		serveOne(c, h)
	}
}

func serveOne(c *net.UnixConn, h Handler) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	stored := false
	if r, err := receive(c, h.Peer); err == nil {
		stored = h.Decide(r)
		r.close()
	}
	answer := []byte{'N'}
	if stored {
		answer[0] = 'S'
	}
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	_, _ = c.Write(answer)
}

// receive reads one request and its four descriptors from c, then checks
// that its sender is this user, and one peer accepts. The request is read
// whole either way: a socket closed with a request unread would reset the
// connection, and the sender would not see the answer.
func receive(c *net.UnixConn, peer func([]byte) bool) (*Request, error) {
	r, err := read(c)
	if err != nil {
		return nil, err
	}
	raw, err := c.SyscallConn()
	if err != nil {
		r.close()
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || cerr != nil {
		r.close()
		return nil, errors.Join(err, cerr)
	}
	if int(cred.Uid) != os.Geteuid() {
		r.close()
		return nil, fmt.Errorf("a request from uid %d", cred.Uid)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cred.Pid))
	if err != nil || !peer(status) {
		r.close()
		return nil, fmt.Errorf("a request from pid %d, another context", cred.Pid)
	}
	return r, nil
}

// read reads one request and its four descriptors from c.
func read(c *net.UnixConn) (*Request, error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	fds, err := rights(oob[:oobn])
	if err != nil {
		return nil, err
	}
	r := &Request{}
	if len(fds) != 4 {
		closeAll(fds)
		return nil, fmt.Errorf("%d descriptors, not 4", len(fds))
	}
	r.Cwd = os.NewFile(uintptr(fds[0]), "cwd")
	for i := range r.Std {
		r.Std[i] = os.NewFile(uintptr(fds[i+1]), fmt.Sprintf("fd %d", i))
	}
	body := buf[:n]
	if n >= 12 {
		size := binary.LittleEndian.Uint32(body[8:])
		if size > MaxRequest || int(size) < n {
			r.close()
			return nil, fmt.Errorf("request size %d", size)
		}
		full := make([]byte, size)
		copy(full, body)
		if _, err := readFull(c, full[n:]); err != nil {
			r.close()
			return nil, err
		}
		body = full
	}
	parsed, err := Parse(body)
	if err != nil {
		r.close()
		return nil, err
	}
	parsed.Cwd, parsed.Std = r.Cwd, r.Std
	return parsed, nil
}

func readFull(c *net.UnixConn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// rights are the descriptors of the SCM_RIGHTS messages in oob.
func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		f, err := unix.ParseUnixRights(&m)
		if err != nil {
			closeAll(fds)
			return nil, err
		}
		fds = append(fds, f...)
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

func (r *Request) close() {
	if r.Cwd != nil {
		r.Cwd.Close()
	}
	for _, f := range r.Std {
		if f != nil {
			f.Close()
		}
	}
}
