package seccomp

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Denial is one system call the filter refused, seen through its user
// notification.
type Denial struct {
	Time    time.Time `json:"time"`
	Pid     int       `json:"pid"`
	Exe     string    `json:"exe,omitempty"`
	Syscall string    `json:"syscall"`
	Number  int       `json:"number"`
	Arch    string    `json:"arch"`
	Errno   string    `json:"errno"`
}

// Notif is one user notification: struct seccomp_notif. Pid is the calling
// thread's id in the supervisor's PID namespace.
type Notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

// notifResp is struct seccomp_notif_resp.
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// Call is a notification of a mediated system call (an ActionMediate rule),
// handed to the Mediator.
type Call struct {
	Notif
	w        *Watcher
	detached bool
	// answer says how the call was answered already, if it was: by
	// Continue or SendFD (the Mediator's own return is then not sent).
	answer answerKind
}

type answerKind uint8

const (
	answerValue answerKind = iota
	answerContinue
	answerSent
)

// Continue lets the kernel carry the call out in the program, as if the
// filter had allowed it (SECCOMP_USER_NOTIF_FLAG_CONTINUE); the Mediator's
// return is then ignored. The kernel reads the arguments again, so the
// program may have changed them since they were looked at: this is only
// for calls whose every effect the kernel still checks in the program
// (its Landlock domain, its capabilities), never to let through what was
// decided by the arguments.
func (c *Call) Continue() { c.answer = answerContinue }

// SendFD installs fd (the supervisor's, left open) in the calling process
// and answers the call with the new descriptor's number
// (SECCOMP_IOCTL_NOTIF_ADDFD, then the answer). cloexec sets FD_CLOEXEC on
// it. The Mediator's return is then ignored.
//
// Not in one step with SECCOMP_ADDFD_FLAG_SEND: the kernel marks the call
// answered before the program's thread has added the descriptor, and if a
// signal interrupts the supervisor's wait in between (the Go runtime
// preempts with SIGURG at any time) it takes the descriptor back and the
// call returns 0, the program's standard input, as the file it opened
// (Linux 5.14 to 6.18 at least). Apart, the descriptor is in the program's
// table a moment before its call returns. On a kernel without
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (before 5.19), a signal of the
// program's in that moment restarts its call, and the descriptor stays,
// unknown to it: a leak, of a file it was opening.
func (c *Call) SendFD(fd int, cloexec bool) unix.Errno {
	a := notifAddFD{ID: c.ID, SrcFD: uint32(fd)}
	if cloexec {
		a.NewFDFlags = unix.O_CLOEXEC
	}
	n, e := c.w.ioctl(unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&a))
	if e != 0 {
		return e
	}
	c.w.respond(c.ID, int64(n), 0)
	c.answer = answerSent
	return 0
}

// notifAddFD is struct seccomp_notif_addfd.
type notifAddFD struct {
	ID         uint64
	Flags      uint32
	SrcFD      uint32
	NewFD      uint32
	NewFDFlags uint32
}

// respondContinue answers notification id with "carry on".
func (w *Watcher) respondContinue(id uint64) {
	r := notifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	_, _ = w.ioctl(unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// Background tells the watcher that the rest of this call may block (a
// connect or a send on a blocking socket): another goroutine takes over
// receiving notifications, and this one ends once the call is answered.
// Mediations run on the receiving goroutine until then, which saves a
// hand-over to another thread on every call that cannot block. Stop no
// longer waits for this one: a send to a queue nobody reads blocks for
// good, and nothing the run's end does wakes it (the supervisor's copy of
// the socket keeps it open); the listener stays open until it is answered.
func (c *Call) Background() {
	if c.detached {
		return
	}
	c.detached = true
	c.w.start()
	c.w.wg.Done()
}

// Valid reports whether the calling thread still waits for this call's
// answer (SECCOMP_IOCTL_NOTIF_ID_VALID). Whatever was read about the caller
// (its memory, its file descriptors, through its pid) is known to be the
// caller's only if Valid holds after it was read: before, the pid may have
// been reused.
func (c *Call) Valid() bool {
	id := c.ID
	_, e := c.w.ioctl(unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id))
	return e == 0
}

// Mediator carries out a mediated call for the program and returns what
// the call returns: a value, or an errno (never 0 with a value). It is
// called in a goroutine of its own for each call and may block as the call
// would.
type Mediator func(c *Call) (val int64, errno unix.Errno)

// Watcher answers a filter's user notifications: errno rules (observed
// with --log-denials) with their rule's errno, reporting each; mediated
// calls with what the Mediator says. Answering errno rules is all it does
// for them: every such notification gets an error, so observing never lets
// a call through. If the watcher is gone, the kernel answers ENOSYS: still
// denied.
type Watcher struct {
	fd   int
	stop [2]int
	wg   sync.WaitGroup // the receiving goroutines (not those gone to the background)
	// refs counts the receiving goroutines and the mediations gone to the
	// background: the listener is closed when the last is done (a
	// mediation blocked in a connect must not answer on a reused
	// descriptor number).
	refs atomic.Int64

	p        *Program
	onDenial func(Denial)
	mediate  Mediator
}

// Watch starts answering the notifications on listener (as received from
// the child) for program p; onDenial is called for each denial, from the
// watcher's goroutine; mediate (nil when p mediates nothing) for each
// mediated call.
func Watch(listener int, p *Program, onDenial func(Denial), mediate Mediator) (*Watcher, error) {
	w := &Watcher{fd: listener, p: p, onDenial: onDenial, mediate: mediate}
	if err := unix.Pipe2(w.stop[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	w.refs.Store(1) // Stop's
	w.start()
	return w, nil
}

// start starts a receiving goroutine.
func (w *Watcher) start() {
	w.refs.Add(1)
	w.wg.Add(1)
	go w.loop()
}

// release drops one reference; the last closes the listener.
func (w *Watcher) release() {
	if w.refs.Add(-1) == 0 {
		unix.Close(w.fd)
	}
}

// respond answers notification id.
func (w *Watcher) respond(id uint64, val int64, errno unix.Errno) {
	r := notifResp{ID: id, Val: val, Error: -int32(errno)}
	if errno != 0 {
		r.Val = 0
	}
	_, _ = w.ioctl(unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// ioctl makes request req of the listener, again while it fails with
// EINTR. The listener's requests take its lock interruptibly, so a signal
// to the supervisor's thread (the Go runtime's SIGURG, at any time) can
// fail one that did nothing: a lost answer would leave the program's call
// waiting for ever, a lost ID_VALID would answer it ESRCH. A request
// interrupted while it waits is taken back before it fails, so none is
// made twice.
func (w *Watcher) ioctl(req uint, arg unsafe.Pointer) (uintptr, unix.Errno) {
	for {
		r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(w.fd), uintptr(req), uintptr(arg))
		if e != unix.EINTR {
			return r, e
		}
	}
}

// loop receives and answers notifications until Stop, or until it hands
// receiving over (Call.Background) and has answered that call.
func (w *Watcher) loop() {
	p, onDenial, mediate := w.p, w.onDenial, w.mediate
	receiving := true
	defer func() {
		if receiving {
			w.wg.Done()
		}
		w.release()
	}()
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.stop[0]), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			// POLLHUP: every process that used the filter is gone.
			return
		}
		var n Notif // the kernel wants it zeroed
		if _, e := w.ioctl(unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); e != 0 {
			continue // ENOENT: the caller died while we looked
		}
		if p.Mediated[n.Nr] && mediate != nil {
			c := &Call{Notif: n, w: w}
			val, errno := mediate(c)
			switch c.answer {
			case answerContinue:
				w.respondContinue(n.ID)
			case answerValue:
				w.respond(n.ID, val, errno)
			}
			if c.detached {
				// Another goroutine receives now (and Stop waits for it,
				// not for this one: Background).
				receiving = false
				return
			}
			continue
		}
		errno, ok := p.Errnos[n.Nr]
		if !ok {
			errno = unix.EPERM
		}
		if onDenial == nil {
			w.respond(n.ID, 0, errno)
			continue
		}
		d := Denial{Time: time.Now(), Pid: int(n.Pid), Number: int(n.Nr), Errno: unix.ErrnoName(errno)}
		d.Syscall, d.Arch = SyscallName(n.Nr)
		// While the caller still waits: once answered it may be gone.
		d.Exe, _ = os.Readlink("/proc/" + strconv.Itoa(d.Pid) + "/exe")
		w.respond(n.ID, 0, errno)
		onDenial(d)
	}
}

// Stop ends the watcher: it waits for the receiving goroutines, not for
// mediations gone to the background; the listener is closed once none is
// in flight. Calls still waiting get ENOSYS from the kernel.
func (w *Watcher) Stop() {
	// Closing the write end wakes every receiver, now and later, with
	// POLLHUP on the read end.
	unix.Close(w.stop[1])
	w.wg.Wait()
	unix.Close(w.stop[0])
	w.release()
}

// SyscallName names the system call nr of this architecture, and the
// architecture; the name is "" for a number libseccomp does not know.
func SyscallName(nr int32) (name, arch string) {
	a := libseccomp.ScmpArch(0)
	if native, err := libseccomp.GetNativeArch(); err == nil {
		a = native
	}
	name, _ = libseccomp.ScmpSyscall(nr).GetNameByArch(a)
	return name, a.String()
}
