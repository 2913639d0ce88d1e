package cgroups

import (
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The OOM watch. On v1 the memory controller kills the one process it picked
// and nothing else: a shell that waits for its children goes on, and the run
// would end "exited 0" with OOM kills in its figures. The watch tells the
// supervisor of the first kill so it can end the whole tree. On v2
// memory.oom.group=1 has the kernel kill the whole group already; the watch
// works there too, so the supervisor has one signal on every host (and one
// that still holds on a kernel without memory.oom.group).
//
// v1: an eventfd registered in cgroup.event_control for memory.oom_control.
// The kernel signals it when the group (or an ancestor whose OOM reaches the
// group) goes under OOM, which is before the victim is picked and killed
// (seen here: the first read after the event still says 0), and also when
// no victim is found or the kill is disabled. So an event only makes the
// watch read the oom_kill counts, for up to oomRecheck while the kill is
// counted; only a count above 0 fires. v1 counts a kill only in the
// victim's own cgroup, so the watch adds up the group and the child cgroups
// a nested supervisor made in it.
//
// v2: an inotify watch on memory.events (kernfs reports every change of the
// file as a modification, after the count changed; the count includes the
// child cgroups); each event reads its oom_kill count.
//
// Either way the fd sits in the runtime's poller and one goroutine waits on
// it; Remove closes the fd, which ends the goroutine.

// oomWatch is a group's OOM watch.
type oomWatch struct {
	// count reads the group's oom_kill count; known is false when the
	// kernel has none (before 4.13).
	count func() (n uint64, known bool, err error)
	fired chan struct{} // closed at the first OOM kill
	f     *os.File      // the eventfd (v1) or inotify fd (v2); nil when none is needed
	stop  chan struct{} // closed by Remove
	done  chan struct{} // closed when the goroutine has returned
}

// oomRecheck bounds how long after a v1 OOM notification the watch waits
// for the kill to be counted.
const oomRecheck = time.Second

// OOMKilled returns a channel that is closed once the kernel has OOM-killed
// at least one process of the group (its oom_kill count, in
// memory.oom_control on v1 and memory.events on v2, is above 0; a process
// merely stalled at the limit does not count). See Group.
func (g *group) OOMKilled() (<-chan struct{}, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.oom != nil {
		return g.oom.fired, nil
	}
	if g.closed {
		return nil, errors.New("cgroups: OOMKilled on a removed group")
	}
	var w *oomWatch
	var err error
	switch {
	case g.mem != nil:
		w, err = watchV1OOM(g.mem.path)
	case g.v2 != nil && fileExists(g.v2.path+"/memory.events"):
		w, err = watchV2OOM(g.v2.path)
	default:
		return nil, nil // no memory controller: nothing counts OOM kills
	}
	if err != nil {
		return nil, err
	}
	g.oom = w
	return w.fired, nil
}

// close ends the watch and waits for its goroutine. The channel stays as it
// is: a watch that has not fired by now never does.
func (w *oomWatch) close() {
	if w.f == nil {
		return
	}
	close(w.stop)
	w.f.Close()
	<-w.done
	w.f = nil
}

func fileExists(p string) bool {
	var st unix.Stat_t
	return unix.Stat(p, &st) == nil
}

// oomCount reads the oom_kill count of file (memory.oom_control or
// memory.events).
func oomCount(file string) (n uint64, known bool, err error) {
	b, err := readFile(file)
	if err != nil {
		return 0, false, err
	}
	n, known = keyValue(string(b), "oom_kill")
	return n, known, nil
}

// v1OOMCount adds up the oom_kill counts of dir and the cgroups below it.
// A child cgroup that goes away meanwhile counts 0.
func v1OOMCount(dir string) (uint64, bool, error) {
	n, known, err := oomCount(dir + "/memory.oom_control")
	if err != nil {
		return 0, false, err
	}
	// kernfs gives a directory 2 links plus one per subdirectory: a stat
	// says whether there are child cgroups, for much less than a listing.
	var st unix.Stat_t
	if unix.Stat(dir, &st) == nil && st.Nlink == 2 {
		return n, known, nil
	}
	subs, err := subdirs(dir)
	if err != nil {
		return n, known, err
	}
	for _, s := range subs {
		c, _, err := v1OOMCount(s)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return n, known, err
		}
		n += c
	}
	return n, known, nil
}

// watchV1OOM registers an eventfd for dir's memory.oom_control. The
// registration comes before the first read of the count, so a kill between
// the two is not missed.
func watchV1OOM(dir string) (*oomWatch, error) {
	ctl := dir + "/memory.oom_control"
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, pathErr("eventfd for", ctl, err)
	}
	cfd, err := openRetry(ctl, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		unix.Close(efd)
		return nil, pathErr("open", ctl, err)
	}
	// The kernel keeps the eventfd, not memory.oom_control's fd, and drops
	// the registration when the eventfd is closed or the group removed.
	err = writeFile(dir+"/cgroup.event_control", strconv.Itoa(efd)+" "+strconv.Itoa(cfd))
	unix.Close(cfd)
	if err != nil {
		unix.Close(efd)
		return nil, err
	}
	w, err := newOOMWatch(efd, "eventfd", ctl, func() (uint64, bool, error) { return v1OOMCount(dir) })
	if err != nil || w.f == nil {
		return w, err
	}
	go w.run(8, true)
	return w, nil
}

// watchV2OOM puts an inotify watch on dir's memory.events.
func watchV2OOM(dir string) (*oomWatch, error) {
	ev := dir + "/memory.events"
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, pathErr("inotify for", ev, err)
	}
	if _, err := unix.InotifyAddWatch(ifd, ev, unix.IN_MODIFY); err != nil {
		unix.Close(ifd)
		return nil, pathErr("watch", ev, err)
	}
	w, err := newOOMWatch(ifd, "inotify", ev, func() (uint64, bool, error) { return oomCount(ev) })
	if err != nil || w.f == nil {
		return w, err
	}
	go w.run(4096, false)
	return w, nil
}

// newOOMWatch makes the watch of fd (registered already for file) and reads
// the count once: when a kill is counted already, the watch is fired and fd
// closed.
func newOOMWatch(fd int, name, file string, count func() (uint64, bool, error)) (*oomWatch, error) {
	w := &oomWatch{count: count, fired: make(chan struct{})}
	n, known, err := count()
	if err == nil && !known {
		err = pathErr("read", file, errors.New("no oom_kill count (kernel before 4.13): an OOM kill cannot be told from an OOM"))
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	if n > 0 {
		unix.Close(fd)
		close(w.fired)
		return w, nil
	}
	f := os.NewFile(uintptr(fd), name)
	// A deadline can be set only on a file in the poller; outside it a read
	// would not wait (and Close would not end it).
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, pathErr("poll "+name+" for", file, err)
	}
	w.f, w.stop, w.done = f, make(chan struct{}), make(chan struct{})
	return w, nil
}

// run waits for events on w.f and fires the watch once the count is above
// 0. With recheck (v1) an event is followed by reads for up to
// oomRecheck. It returns when it fired, when w.f is closed, or when the
// group is gone.
func (w *oomWatch) run(bufSize int, recheck bool) {
	defer close(w.done)
	buf := make([]byte, bufSize)
	for {
		if _, err := w.f.Read(buf); err != nil {
			return // closed by Remove
		}
		fired, gone := w.check(recheck)
		if fired {
			close(w.fired)
			return
		}
		if gone {
			return
		}
	}
}

// check reads the count after an event; with recheck it reads again, 1 ms
// apart at first, until the count is above 0 or oomRecheck has passed. gone
// says the watch is over: the group was removed.
func (w *oomWatch) check(recheck bool) (fired, gone bool) {
	d := time.Millisecond
	end := time.Now().Add(oomRecheck)
	for {
		n, _, err := w.count()
		switch {
		case errors.Is(err, unix.ENOENT):
			return false, true
		case n > 0:
			return true, false
		case !recheck || time.Now().After(end):
			return false, false
		}
		t := time.NewTimer(d)
		select {
		case <-w.stop:
			t.Stop()
			return false, true
		case <-t.C:
		}
		d = min(2*d, 50*time.Millisecond)
	}
}
