package auditlog

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Denial is one request the run's own Landlock domain denied, as the
// kernel recorded it, with the call and process of its event when the
// kernel recorded those too (an AUDIT_SYSCALL record: only for a process
// that has an audit context, which the kernel gives to processes started
// after the audit was first enabled).
type Denial struct {
	Time   time.Time
	Access Access
	// Pid, Exe and Comm are the process's; Syscall the call's number and
	// Errno what it got. Zero when the event had no syscall record.
	Pid       int
	Exe, Comm string
	Syscall   int
	Errno     unix.Errno
}

// Summary is what a Run saw.
type Summary struct {
	// Attributed: the kernel named the run's domain (it does with the
	// domain's first logged denial), Domain its ID.
	Attributed bool
	Domain     uint64
	// Denials is how many denial records of the run's domain were read.
	Denials int64
	// KernelDenials is how many requests the kernel says the domain
	// denied, logged or not (its record at the domain's end), when
	// KernelCounted.
	KernelDenials uint64
	KernelCounted bool
	// Overruns counts the times the socket's buffer overflowed (records
	// lost); Malformed the records Parse refused; Conflicts the domains
	// besides the first that named the run's creator (none is expected).
	Overruns, Malformed, Conflicts int
	// Err is the error that ended the reading early, if one did.
	Err error
}

// How long an event waits for its records (a syscall record, the end of
// the event) before it is taken as it is, and how many events wait.
const (
	eventWait  = 100 * time.Millisecond
	maxPending = 4096
)

// Run reads the records of one run's Landlock domain from the audit
// socket the runner opened. The run's domain is the one whose allocation
// record names creator (a pid, as this process's PID namespace numbers it)
// and comm: the pid and the name the program had when it made its domain
// (stage.c's se_audit_mark). A pid alone would not do, as pids are reused,
// and a name alone neither, as a name can be copied: the pair can only be
// the program's, whose pid was not another live process's when it took a
// name that was random and its own.
type Run struct {
	sock *socket
	a    assembler
	mu   sync.Mutex
	stop time.Time // set by Finish: when to stop waiting
	// mark is how the user message Finish had the kernel log after the
	// run's records shows in its record, "msg='TEXT'" (nil: none);
	// marked once it was read.
	mark   []byte
	marked bool
	done   chan struct{}
}

// Start reads the audit socket fd (taking it) for the run whose domain
// creator made, named comm; out receives each denial, from one goroutine.
func Start(fd, creator int, comm string, out func(Denial)) *Run {
	r := &Run{sock: newSocket(fd), done: make(chan struct{})}
	r.a = assembler{creator: creator, comm: comm, out: out, pending: map[Stamp]*event{}}
	go r.loop()
	return r
}

// loop reads until Finish says so, or the socket fails.
func (r *Run) loop() {
	defer close(r.done)
	for {
		// Reads wake often enough to take events that will have no more
		// records; once Finish is called, only until nothing is left.
		r.mu.Lock()
		wake := time.Now().Add(20 * time.Millisecond)
		awaiting := r.mark != nil && !r.marked
		switch {
		case !r.stop.IsZero() && (awaiting || r.a.sum.Attributed && !r.a.sum.KernelCounted):
			wake = time.Now().Add(5 * time.Millisecond)
		case !r.stop.IsZero():
			wake = time.Now() // what is there, and no wait
		}
		r.mu.Unlock()
		msgs, err := r.sock.read(wake)
		idle := errors.Is(err, os.ErrDeadlineExceeded)
		now := time.Now()
		r.mu.Lock()
		for _, m := range msgs {
			if m.typ == auditUser {
				r.marked = r.marked || r.mark != nil && bytes.Contains(m.data, r.mark)
				continue
			}
			r.a.message(m, now)
		}
		switch {
		case errors.Is(err, errOverrun):
			r.a.sum.Overruns++
		case err != nil && !idle:
			r.a.sum.Err = err
		}
		r.a.flushOlder(now.Add(-eventWait))
		stopping := !r.stop.IsZero()
		settled := (r.mark == nil || r.marked) && (!r.a.sum.Attributed || r.a.sum.KernelCounted)
		finished := r.a.sum.Err != nil || (stopping && idle && (settled || now.After(r.stop)))
		if finished {
			r.a.flushOlder(now.Add(time.Hour))
		}
		r.mu.Unlock()
		if finished {
			return
		}
	}
}

// Finish stops reading once the kernel has sent what it queued and
// nothing more comes; where the run's domain showed, it waits up to wait
// for the kernel's count of its denials (sent when the domain is freed,
// shortly after its last process). It closes the socket and returns what
// was seen.
//
// The kernel sends records from a queue of its own, and what it still
// holds may be the run's: Finish has it log a mark of its own after them
// (sendMark) and reads until the mark, up to wait. A queue seen empty is
// not enough: the kernel's sender takes a record off the queue before it
// sends it, and a busy machine can hold it in between, so a run's last
// denial was once read after the reading had stopped. Where the kernel
// refuses the mark (no CAP_AUDIT_WRITE), Finish waits for an empty queue,
// as before.
func (r *Run) Finish(wait time.Duration) Summary {
	var token [8]byte
	_, _ = rand.Read(token[:])
	text := "sandbox-executable end-of-run=" + hex.EncodeToString(token[:])
	// Known before it is sent: the reader may see it before the kernel's
	// answer to the sender.
	r.mu.Lock()
	r.mark = []byte("msg='" + text + "'")
	r.mu.Unlock()
	if sendMark(text) != nil {
		r.mu.Lock()
		r.mark, r.marked = nil, false
		r.mu.Unlock()
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
			st, err := QueryStatus()
			if err != nil || st.Backlog == 0 {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	r.mu.Lock()
	r.stop = time.Now().Add(wait)
	r.mu.Unlock()
	// Wakes a read waiting meanwhile.
	_ = r.sock.f.SetReadDeadline(time.Now())
	<-r.done
	r.sock.close()
	return r.a.sum
}

// event is the records of one audit event seen so far.
type event struct {
	first   time.Time
	access  []Access
	syscall *Syscall
}

// assembler groups records by event and keeps the run's.
type assembler struct {
	creator int
	comm    string
	out     func(Denial)
	pending map[Stamp]*event
	order   []Stamp
	sum     Summary
}

// message takes one netlink message.
func (a *assembler) message(m message, now time.Time) {
	rec, err := Parse(m.typ, m.data)
	if errors.Is(err, ErrIgnored) {
		return
	}
	if err != nil {
		a.sum.Malformed++
		return
	}
	a.add(rec, now)
}

// add takes one parsed record.
func (a *assembler) add(rec any, now time.Time) {
	switch x := rec.(type) {
	case Access:
		// Once the run's domain is known, no other's record is kept.
		if a.sum.Attributed && x.Domain != a.sum.Domain {
			return
		}
		ev := a.pending[x.Stamp]
		if ev == nil {
			if len(a.pending) >= maxPending {
				a.flush(a.order[0])
			}
			ev = &event{first: now}
			a.pending[x.Stamp] = ev
			a.order = append(a.order, x.Stamp)
		}
		ev.access = append(ev.access, x)
	case Domain:
		switch {
		case x.Allocated && a.creator > 0 && x.Pid == a.creator && x.Comm == a.comm:
			if !a.sum.Attributed {
				a.sum.Attributed, a.sum.Domain = true, x.ID
			} else if x.ID != a.sum.Domain {
				a.sum.Conflicts++
			}
		case !x.Allocated && a.sum.Attributed && x.ID == a.sum.Domain:
			a.sum.KernelDenials, a.sum.KernelCounted = x.Denials, true
		}
	case Syscall:
		if ev := a.pending[x.Stamp]; ev != nil {
			ev.syscall = &x
		}
	case EOE:
		a.flush(x.Stamp)
	}
}

// flushOlder resolves the events that began before t.
func (a *assembler) flushOlder(t time.Time) {
	for len(a.order) > 0 {
		ev := a.pending[a.order[0]]
		if ev != nil && !ev.first.Before(t) {
			return
		}
		a.flush(a.order[0])
	}
}

// flush resolves the event st: its accesses by the run's domain become
// denials; the others go.
func (a *assembler) flush(st Stamp) {
	ev := a.pending[st]
	delete(a.pending, st)
	for i, s := range a.order {
		if s == st {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
	if ev == nil || !a.sum.Attributed {
		return
	}
	for _, x := range ev.access {
		if x.Domain != a.sum.Domain {
			continue
		}
		d := Denial{Time: time.Unix(int64(x.Sec), int64(x.Milli)*int64(time.Millisecond)), Access: x}
		if s := ev.syscall; s != nil {
			d.Pid, d.Exe, d.Comm, d.Syscall = s.Pid, s.Exe, s.Comm, s.Number
			if !s.Success && s.Exit < 0 && s.Exit > -4096 {
				d.Errno = unix.Errno(-s.Exit)
			}
		}
		a.sum.Denials++
		if a.out != nil {
			a.out(d)
		}
	}
}
