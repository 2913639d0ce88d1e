package fsmed

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"sandbox-executable/deputy"
	"sandbox-executable/landlock"
	"sandbox-executable/seccomp"
	"sandbox-executable/spawn"
)

// key is an inode's identity.
type key struct{ dev, ino uint64 }

func keyOf(st *unix.Stat_t) key { return key{uint64(st.Dev), st.Ino} }

// state is what the Mediator found in the program's view at its first
// call: before any call that makes, removes or renames an entry has been
// carried out (every such call comes here first), so the split directories
// and their entries are those the program's Landlock rules were made for.
type state struct {
	split map[key]*Dir
	// protected are the protected entries that exist (beneath them the
	// kernel refuses every change: the program has no rule there).
	protected map[key]bool
	// granted are the entries of the split directories that were there at
	// the start, which the program's rules grant whole: beneath them the
	// kernel carries calls out itself. An entry the Mediator removes or
	// replaces leaves the set (a new inode may reuse its number).
	mu      sync.Mutex
	granted map[key]bool
	// thread makes the calls the Mediator carries out.
	thread *deputy.Thread
	// umask is the supervisor's (the thread's, shared with the process).
	umask uint32
}

// setUp finds the split directories in the program's view (through the
// root of thread tid) and starts the mediating thread. An error leaves the
// Mediator letting the kernel decide every call: in the split directories
// it refuses them, as it did before mediation.
func (m *Mediator) setUp(c *seccomp.Call) (*state, error) {
	root, err := unix.Open("/proc/"+strconv.Itoa(int(c.Pid))+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	if !c.Valid() {
		return nil, unix.ESRCH
	}
	s := &state{split: map[key]*Dir{}, protected: map[key]bool{}, granted: map[key]bool{}}
	open := func(path string) (int, error) {
		// The paths of a decision are canonical: no link on the way.
		return unix.Openat2(root, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	}
	for i := range m.cfg.Dirs {
		d := &m.cfg.Dirs[i]
		fd, err := open(d.Path)
		if err != nil {
			continue // gone: nothing of it is mediated, the kernel refuses
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || (d.Ino != 0 && (uint64(st.Dev) != d.Dev || st.Ino != d.Ino)) {
			unix.Close(fd)
			continue // not the directory the decision saw: not mediated
		}
		s.split[keyOf(&st)] = d
		s.entries(fd, d)
		unix.Close(fd)
	}
	// A protected name that is itself split (a directory above a denied
	// path) is a split directory, not a protected entry.
	for k := range s.split {
		delete(s.protected, k)
	}
	var dirs []int
	defer func() {
		for _, fd := range dirs {
			unix.Close(fd)
		}
	}()
	for _, r := range m.cfg.Roots {
		if fd, err := open(r); err == nil {
			dirs = append(dirs, fd)
		}
	}
	rights := uint64(landlock.WriterRights(m.cfg.ABI))
	if m.cfg.ABI < 1 || rights == 0 {
		return nil, fmt.Errorf("fsmed: no Landlock to confine the mediating thread with")
	}
	if s.thread, err = deputy.NewThread(func() error { return spawn.RestrictThread(rights, dirs) }); err != nil {
		return nil, err
	}
	s.umask = umaskOf(os.Getpid())
	return s, nil
}

// entries records the identities of d's protected entries and of the
// others, granted whole to the program.
func (s *state) entries(fd int, d *Dir) {
	dir, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(dir), d.Path)
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		switch {
		case d.protects(name):
			s.protected[keyOf(&st)] = true
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			s.granted[keyOf(&st)] = true
		}
	}
}

// place is where a directory lies.
type place int

const (
	// outside every split directory: the program's rules decide.
	outside place = iota
	// beneath an entry the program's rules grant: they decide.
	granted
	// a split directory itself: the Mediator carries the call out, for
	// any name but a protected one.
	top
	// beneath an entry of a split directory made or moved there during
	// the run, under a name that is not protected: the Mediator carries
	// the call out.
	managed
	// a protected entry or beneath one: the program's rules refuse.
	protected
)

// where finds where the directory p lies, walking up from it ("..", the
// way the kernel goes) to the nearest split directory. The walk is sound
// while the program runs: nothing on the way from a split directory to a
// protected entry can be moved (the program has no rule there, and the
// Mediator never moves a protected name), so a directory beneath a
// protected entry is found beneath it however the program renames its own
// directories meanwhile. For top, managed and granted, d is the nearest
// split directory.
func (s *state) where(p int) (place, *Dir) {
	cur, owned := p, false
	defer func() {
		if owned {
			unix.Close(cur)
		}
	}()
	var child key
	for depth := 0; depth < 4096; depth++ {
		var st unix.Stat_t
		if unix.Fstat(cur, &st) != nil {
			return outside, nil
		}
		k := keyOf(&st)
		if d, ok := s.split[k]; ok {
			switch {
			case depth == 0:
				return top, d
			case s.protected[child]:
				return protected, nil
			case s.isGranted(child):
				return granted, d
			case protectedNow(cur, d, child):
				return protected, nil
			}
			return managed, d
		}
		if s.protected[k] {
			return protected, nil
		}
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return outside, nil
		}
		var ust unix.Stat_t
		if unix.Fstat(up, &ust) != nil || keyOf(&ust) == k {
			unix.Close(up) // the root: no split directory above
			return outside, nil
		}
		if owned {
			unix.Close(cur)
		}
		cur, owned, child = up, true, k
	}
	return outside, nil
}

// protectedNow reports whether the entry child of the split directory dir
// (d) has one of d's protected names now: one that appeared during the run
// (a host's git init, another run's placeholder) has no rule of the
// program's, like an entry the program made, but it is not the program's
// to fill.
func protectedNow(dir int, d *Dir, child key) bool {
	for _, name := range d.Names {
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && keyOf(&st) == child {
			return true
		}
	}
	return false
}

func (s *state) isGranted(k key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.granted[k]
}

// forget takes the entry name of the directory p out of the granted set:
// it is about to be removed or replaced.
func (s *state) forget(p int, name string) {
	var st unix.Stat_t
	if unix.Fstatat(p, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	s.mu.Lock()
	delete(s.granted, keyOf(&st))
	s.mu.Unlock()
}

// modeFor gives the permissions an entry made in the directory dir for
// thread tid gets, as the kernel would give them to the program: perm less
// the thread's umask, or perm whole where dir has a default ACL (the
// kernel then applies the ACL and no umask). fix says that the
// supervisor's own umask, which the kernel applies to the entry the thread
// makes, takes away more: fixMode must put the permissions right.
func (st *state) modeFor(tid, dir int, perm uint32) (want uint32, fix bool) {
	if n, err := unix.Getxattr("/proc/self/fd/"+strconv.Itoa(dir), "system.posix_acl_default", nil); err == nil && n > 0 {
		return perm, false
	}
	want = perm &^ umaskOf(tid)
	return want, want&^st.umask != want
}

// umaskOf reads thread tid's umask (Linux 4.7 and later); 022 where it
// cannot be read.
func umaskOf(tid int) uint32 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0o022
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(n)
			}
		}
	}
	return 0o022
}
