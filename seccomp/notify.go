package seccomp

import (
	"os"
	"strconv"
	"sync"
	"time"

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

// Watcher answers a filter's user notifications with the errno of the rule
// that matched, and reports each one. Answering is all it does: every
// notification gets an error, so observing never lets a call through. If the
// watcher is gone, the kernel answers ENOSYS: still denied.
type Watcher struct {
	fd   int
	stop [2]int
	wg   sync.WaitGroup
}

// Watch starts answering the notifications on listener (as received from
// the child) for program p; onDenial is called for each, from the
// watcher's goroutine.
func Watch(listener int, p *Program, onDenial func(Denial)) (*Watcher, error) {
	w := &Watcher{fd: listener}
	if err := unix.Pipe2(w.stop[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	w.wg.Add(1)
	go w.loop(p, onDenial)
	return w, nil
}

func (w *Watcher) loop(p *Program, onDenial func(Denial)) {
	defer w.wg.Done()
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
		req, err := libseccomp.NotifReceive(libseccomp.ScmpFd(w.fd))
		if err != nil {
			continue // ENOENT: the caller died while we looked
		}
		errno, ok := p.Errnos[int32(req.Data.Syscall)]
		if !ok {
			errno = unix.EPERM
		}
		d := Denial{Time: time.Now(), Pid: int(req.Pid), Number: int(req.Data.Syscall), Arch: req.Data.Arch.String(), Errno: unix.ErrnoName(errno)}
		d.Syscall, _ = req.Data.Syscall.GetNameByArch(req.Data.Arch)
		d.Exe, _ = os.Readlink("/proc/" + strconv.Itoa(d.Pid) + "/exe")
		_ = libseccomp.NotifRespond(libseccomp.ScmpFd(w.fd), &libseccomp.ScmpNotifResp{ID: req.ID, Error: int32(errno)})
		if onDenial != nil {
			onDenial(d)
		}
	}
}

// Stop ends the watcher and closes the listener. Calls still waiting get
// ENOSYS from the kernel.
func (w *Watcher) Stop() {
	_, _ = unix.Write(w.stop[1], []byte{0})
	w.wg.Wait()
	unix.Close(w.stop[0])
	unix.Close(w.stop[1])
	unix.Close(w.fd)
}
