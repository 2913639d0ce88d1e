package mountns

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/runstate"
)

// Placeholders are shared: two sandboxes over the same workspace both need
// "<root>/.codex" covered, and the second may find the first one's
// placeholder. Placeholders are grouped by the directory they are in (all
// of a root's protected names share one): each sandbox holds a shared flock
// on that directory's lock file in a registry directory for its whole run;
// the one that can take the lock exclusively at the end is the last user and
// removes the placeholders, but only those that are still the empty
// directories a sandbox created: their device and inode are recorded, one
// line each, in the lock file itself. A placeholder left by a supervisor
// that was killed is removed by the next run that claims its directory.
// Lock files are never removed, so a lock taken is always the one in place.

// Claims holds the locks of one run's placeholders.
type Claims struct {
	groups []*claimGroup
}

// claimGroup is the placeholders of one directory.
type claimGroup struct {
	parent string
	names  []string
	lock   *os.File
}

// ClaimPlaceholders locks every path's directory and creates the paths that
// are missing as empty directories (mode 0700). Release must be called after
// the run.
func ClaimPlaceholders(paths []string) (*Claims, error) {
	c := &Claims{}
	if len(paths) == 0 {
		return c, nil
	}
	dir, err := runstate.Dir("placeholders")
	if err != nil {
		return nil, fmt.Errorf("placeholder registry: %w", err)
	}
	byParent := map[string]*claimGroup{}
	for _, p := range paths {
		parent, name := filepath.Split(p)
		parent = filepath.Clean(parent)
		g := byParent[parent]
		if g == nil {
			g = &claimGroup{parent: parent}
			byParent[parent] = g
			c.groups = append(c.groups, g)
		}
		g.names = append(g.names, name)
	}
	for _, g := range c.groups {
		if err := g.claim(dir); err != nil {
			c.Release()
			return nil, err
		}
	}
	return c, nil
}

func (g *claimGroup) claim(dir string) error {
	sum := sha256.Sum256([]byte(g.parent))
	f, err := os.OpenFile(filepath.Join(dir, hex.EncodeToString(sum[:16])), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("placeholder %s: lock: %w", g.parent, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		f.Close()
		return fmt.Errorf("placeholder %s: lock: %w", g.parent, err)
	}
	g.lock = f
	var rec bytes.Buffer
	for _, name := range g.names {
		path := filepath.Join(g.parent, name)
		err := unix.Mkdir(path, 0o700)
		if errors.Is(err, unix.EEXIST) {
			continue // a real entry, or another sandbox's placeholder
		}
		if err != nil {
			return fmt.Errorf("placeholder %s: %w", path, err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return fmt.Errorf("placeholder %s: %w", path, err)
		}
		fmt.Fprintf(&rec, "%d %d %s\n", st.Dev, st.Ino, name)
	}
	if rec.Len() > 0 {
		// One append: lines of concurrent claimers never interleave.
		if _, err := f.Write(rec.Bytes()); err != nil {
			return fmt.Errorf("placeholder %s: record: %w", g.parent, err)
		}
	}
	return nil
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
		if unix.Flock(int(g.lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			g.removeOurs()
		}
		g.lock.Close()
		g.lock = nil
	}
	c.groups = nil
}

// removeOurs removes every recorded placeholder that is still the empty
// directory the record names, and keeps the records of the others (a
// placeholder someone outside wrote into stays, and is retried next time).
func (g *claimGroup) removeOurs() {
	if _, err := g.lock.Seek(0, io.SeekStart); err != nil {
		return
	}
	data, err := io.ReadAll(g.lock)
	if err != nil || len(data) == 0 {
		return
	}
	var keep bytes.Buffer
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 || strings.Contains(f[2], "/") {
			continue // not a record of ours
		}
		path := filepath.Join(g.parent, f[2])
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil || strconv.FormatUint(st.Dev, 10) != f[0] || strconv.FormatUint(st.Ino, 10) != f[1] {
			continue // gone, or replaced by something that is not ours
		}
		if unix.Rmdir(path) != nil {
			keep.WriteString(line + "\n")
		}
	}
	_ = g.lock.Truncate(0)
	if keep.Len() > 0 {
		_, _ = g.lock.Write(keep.Bytes())
	}
}
