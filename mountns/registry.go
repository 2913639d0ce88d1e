package mountns

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
	"sandbox-executable/runstate"
	"sandbox-executable/spawn"
)

// The placeholder registry. Placeholders are shared: two sandboxes over the
// same workspace both need "<root>/.codex" covered, and the second finds the
// first one's placeholder. The danger is removal: a directory that is a
// mountpoint in another mount namespace can be removed on the host, and the
// kernel then drops that namespace's mount over it, so a placeholder removed
// while another run's program is running uncovers the name for that program.
// The protocol:
//
//   - Placeholders are grouped by the directory they are in. Each group has a
//     registry directory (g-<hash of the directory>) holding a lock file, a
//     symbolic link "dir" whose text is the directory (for the stale sweep),
//     and one record per placeholder, "n-<name>", a symbolic link whose text is
//     "<dev>:<ino>:<ctime sec>:<ctime nsec>" of the empty directory a run made
//     (a symbolic link is made in one call, so a record is never half
//     written).
//   - A run takes a shared flock on every group a placeholder of its view
//     could be in before it decides anything (Claim), and holds it until its
//     program and everything it started are gone (Release; should the
//     supervisor be killed, its guardian holds the same open lock until the
//     tree is gone). A placeholder is removed only by a holder of the
//     exclusive lock, which exists only when no other run holds a claim: no
//     placeholder any running program's view covers can disappear.
//   - Deciding under the claim, a run treats an existing directory that
//     matches its record (device, inode, ctime) as a placeholder, and makes
//     the missing ones, recording each. Runs decide one at a time per group
//     (an exclusive flock on the group's "decide" file, held from the
//     decision until the records are made): a directory another run has
//     made but not yet recorded is never taken for the user's.
//   - The last user (the exclusive lock taken without waiting) removes every
//     recorded placeholder that still matches its record, and drops the
//     records: a directory that no longer matches (someone wrote into it,
//     chmodded it, or replaced it) is the user's now and stays; rmdir
//     refuses a non-empty one anyway. Records are dropped under the
//     exclusive lock, so a directory the user makes later under the same
//     name (even one that reuses the inode number: the ctime differs) is
//     never taken for a placeholder.
//   - A crash that left placeholders (supervisor and guardian both killed)
//     is cleaned by the next run in that directory, which claims them as
//     recorded, or by the stale sweep (SweepStale).
//
// Lock files and group directories are never removed, so a lock taken is
// always the one in place.

// Claims is one run's hold on the placeholder groups its view may use.
type Claims struct {
	groups   []*claimGroup
	byParent map[string]*claimGroup
	dir      string // the registry; "" when there is nothing to claim
}

// claimGroup is the placeholders of one directory.
type claimGroup struct {
	parent string // the directory the placeholders are in
	dir    string // its registry directory
	lock   *os.File
	// known are the placeholders this run created or found recorded.
	known map[string]spawn.GuardedDir
}

// registryDir is the registry's place in the state directory.
const registryDir = "placeholders"

// claimWait bounds the wait for a lock: the protocol holds an exclusive one
// only while a last user removes placeholders or a run decides, a matter
// of microseconds.
const claimWait = 10 * time.Second

// groupDir is the registry directory of the placeholders in parent.
func groupDir(reg, parent string) string {
	sum := sha256.Sum256([]byte(parent))
	return filepath.Join(reg, "g-"+hex.EncodeToString(sum[:16]))
}

// Claim takes the run's claims on every directory a placeholder of v could
// be made in, decides v again under them (other runs may have made or
// removed placeholders since v was built), and makes the placeholders the
// returned view needs. Release must be called once the program and
// everything it started are gone, whether or not the run went ahead.
func Claim(v *View) (*View, *Claims, error) {
	c := &Claims{byParent: map[string]*claimGroup{}}
	parents := v.placeholderParents()
	if len(parents) == 0 {
		return v, c, nil
	}
	reg, err := runstate.Dir(registryDir)
	if err != nil {
		return nil, nil, fmt.Errorf("placeholder registry: %w", err)
	}
	c.dir = reg
	for _, parent := range parents {
		g := &claimGroup{parent: parent, dir: groupDir(reg, parent), known: map[string]spawn.GuardedDir{}}
		if err := g.claim(); err != nil {
			c.Release()
			return nil, nil, err
		}
		c.groups = append(c.groups, g)
		c.byParent[parent] = g
	}
	// The decision, in the order of the (sorted) groups.
	var deciding []*os.File
	defer func() {
		for _, f := range deciding {
			f.Close()
		}
	}()
	for _, g := range c.groups {
		f, err := os.OpenFile(filepath.Join(g.dir, "decide"), os.O_RDWR|os.O_CREATE, 0o600)
		if err == nil {
			if err = lockWait(f, unix.LOCK_EX); err != nil {
				f.Close()
			}
		}
		if err != nil {
			c.Release()
			return nil, nil, fmt.Errorf("placeholder %s: lock: %w", g.parent, err)
		}
		deciding = append(deciding, f)
	}
	w, err := v.redecide(c.registered)
	if err != nil {
		c.Release()
		return nil, nil, err
	}
	for _, p := range w.Placeholders {
		if err := c.create(p); err != nil {
			c.Release()
			return nil, nil, err
		}
	}
	return w, c, nil
}

// peekRegistered returns a test for recorded placeholders that takes no
// claim, for a view that is only shown (Build): a run decides again under
// its claims. What it reads is the decision's: the record (a recorded
// readlink) and, where there is one, the directory's identity with its
// ctime (a recorded lstat that compares the ctime).
func peekRegistered() func(string) bool {
	reg := ""
	return func(path string) bool {
		if reg == "" {
			var err error
			if reg, err = runstate.Dir(registryDir); err != nil {
				return false
			}
		}
		d, ok := readRecord(groupDir(reg, filepath.Dir(path)), filepath.Base(path))
		if !ok {
			return false
		}
		fi, err := fsdeps.LstatCtime(path)
		return err == nil && fi.IsDir() && fi.Dev() == d.Dev && fi.Ino() == d.Ino &&
			fi.Ctime.Sec == d.Ctime.Sec && fi.Ctime.Nsec == d.Ctime.Nsec
	}
}

// claim opens the group's lock and takes it shared.
func (g *claimGroup) claim() error {
	if err := unix.Mkdir(g.dir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("placeholder registry: %w", err)
	}
	if err := unix.Symlink(g.parent, filepath.Join(g.dir, "dir")); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("placeholder registry: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(g.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("placeholder %s: lock: %w", g.parent, err)
	}
	if err := lockWait(f, unix.LOCK_SH); err != nil {
		f.Close()
		return fmt.Errorf("placeholder %s: lock: %w", g.parent, err)
	}
	g.lock = f
	return nil
}

// lockWait takes f's flock (how: LOCK_SH or LOCK_EX), waiting at most
// claimWait: a lock held longer is held by something other than this
// protocol, and the run fails rather than hangs.
func lockWait(f *os.File, how int) error {
	pause := 50 * time.Microsecond
	deadline := time.Now().Add(claimWait)
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil || !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("held by another process for more than %s", claimWait)
		}
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Millisecond)
	}
}

// registered reports whether the directory at path is a recorded
// placeholder of a group this run claims (and remembers it).
func (c *Claims) registered(path string) bool {
	g := c.byParent[filepath.Dir(path)]
	if g == nil {
		return false
	}
	if _, ok := g.known[path]; ok {
		return true
	}
	d, ok := readRecord(g.dir, filepath.Base(path))
	if !ok {
		return false
	}
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil || !d.Matches(&st) {
		return false
	}
	d.Path = path
	g.known[path] = d
	return true
}

// create makes the placeholder at path and records it, unless it exists
// (a recorded one, or one another run made a moment ago under its own
// claim: covered all the same, and removed by whoever is last).
func (c *Claims) create(path string) error {
	g := c.byParent[filepath.Dir(path)]
	if g == nil {
		return fmt.Errorf("placeholder %s: not in a claimed directory", path)
	}
	err := unix.Mkdir(path, 0o700)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("placeholder %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fmt.Errorf("placeholder %s: %w", path, err)
	}
	d := spawn.GuardedDir{Path: path, Record: recordPath(g.dir, filepath.Base(path)), Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim}
	text := fmt.Sprintf("%d:%d:%d:%d", d.Dev, d.Ino, d.Ctime.Sec, d.Ctime.Nsec)
	err = unix.Symlink(text, d.Record)
	if errors.Is(err, unix.EEXIST) {
		// A record of an earlier placeholder that is gone (the new
		// directory could be made): this one replaces it.
		_ = unix.Unlink(d.Record)
		err = unix.Symlink(text, d.Record)
	}
	if err != nil {
		_ = unix.Rmdir(path)
		return fmt.Errorf("placeholder %s: record: %w", path, err)
	}
	g.known[path] = d
	return nil
}

func recordPath(group, name string) string { return filepath.Join(group, "n-"+name) }

// readRecord reads the record of the placeholder name in a group (a
// recorded readlink: the decision's view depends on it, see
// peekRegistered).
func readRecord(group, name string) (spawn.GuardedDir, bool) {
	rec := recordPath(group, name)
	text, err := fsdeps.Readlink(rec)
	if err != nil {
		return spawn.GuardedDir{}, false
	}
	f := strings.Split(text, ":")
	if len(f) != 4 {
		return spawn.GuardedDir{}, false
	}
	var n [4]int64
	for i, s := range f {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return spawn.GuardedDir{}, false
		}
		n[i] = x
	}
	return spawn.GuardedDir{Record: rec, Dev: uint64(n[0]), Ino: uint64(n[1]), Ctime: unix.Timespec{Sec: n[2], Nsec: n[3]}}, true
}

// Guarded lists the run's locks with the placeholders it knows in each, for
// the guardian: it keeps the same open locks, and removes those
// placeholders should the supervisor die, once the program is gone and when
// the lock can be taken exclusively.
func (c *Claims) Guarded() []spawn.GuardedLock {
	if c == nil {
		return nil
	}
	var out []spawn.GuardedLock
	for _, g := range c.groups {
		if g.lock == nil {
			continue
		}
		l := spawn.GuardedLock{FD: int(g.lock.Fd())}
		for _, d := range g.known {
			l.Placeholders = append(l.Placeholders, d)
		}
		sort.Slice(l.Placeholders, func(i, j int) bool { return l.Placeholders[i].Path < l.Placeholders[j].Path })
		out = append(out, l)
	}
	return out
}

// Release gives up the claims; the last user of a directory's placeholders
// removes them.
func (c *Claims) Release() {
	if c == nil {
		return
	}
	for _, g := range c.groups {
		if g.lock == nil {
			continue
		}
		fd := int(g.lock.Fd())
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			removeRecorded(g.dir, g.parent)
		}
		// Explicitly: a guardian may still hold the same open lock.
		_ = unix.Flock(fd, unix.LOCK_UN)
		g.lock.Close()
		g.lock = nil
	}
	c.groups = nil
}

// removeRecorded removes, under the group's exclusive lock, every recorded
// placeholder of parent that still matches its record, and drops the
// records of those gone or no longer ours. A record is kept only when the
// directory may be ours but could not be removed (retried by the next last
// user, or the sweep).
func removeRecorded(group, parent string) {
	ents, err := os.ReadDir(group)
	if err != nil {
		return
	}
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), "n-")
		if !ok {
			continue
		}
		d, ok := readRecord(group, name)
		if !ok {
			_ = unix.Unlink(recordPath(group, name))
			continue
		}
		path := filepath.Join(parent, name)
		var st unix.Stat_t
		err := unix.Lstat(path, &st)
		switch {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			continue
		case d.Matches(&st):
			if err := unix.Rmdir(path); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTEMPTY) {
				continue
			}
		}
		_ = unix.Unlink(d.Record)
	}
}

// SweepStale removes the placeholders that no run claims: left by runs
// whose supervisor and guardian both died in a directory no run has used
// since. It takes each group's lock exclusively without waiting, so a group
// in use is left alone (its last user removes them).
func SweepStale() {
	reg, err := runstate.Dir(registryDir)
	if err != nil {
		return
	}
	ents, err := os.ReadDir(reg)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "g-") || !e.IsDir() {
			continue
		}
		group := filepath.Join(reg, e.Name())
		parent, err := os.Readlink(filepath.Join(group, "dir"))
		if err != nil || !filepath.IsAbs(parent) || groupDir(reg, parent) != group {
			continue // not a group this code made
		}
		if !hasRecords(group) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(group, "lock"), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			removeRecorded(group, parent)
		}
		f.Close()
	}
}

// hasRecords reports whether a group records any placeholder.
func hasRecords(group string) bool {
	f, err := os.Open(group)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	for _, n := range names {
		if strings.HasPrefix(n, "n-") {
			return true
		}
	}
	return false
}
