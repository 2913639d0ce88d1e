package mountns

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Placeholders are shared: two sandboxes over the same workspace both need
// "<root>/.codex" covered, and the second may find the first one's
// placeholder. Each sandbox holds a shared flock on a per-path lock file in a
// registry directory for its whole run; the one that can upgrade to an
// exclusive lock at the end is the last user and removes the placeholder,
// but only if it is still the empty directory a sandbox created (its device
// and inode are recorded next to the lock). A placeholder left by a
// supervisor that was killed is removed by the next run that claims it.

// Claims holds the locks of one run's placeholders.
type Claims struct {
	dir   string
	locks []*claim
}

type claim struct {
	path string
	key  string
	lock *os.File
}

// registryBase overrides the registry's location (tests).
var registryBase string

// registryDir is where lock files and records live: a directory only this
// user can write.
func registryDir() (string, error) {
	base := registryBase
	switch {
	case base != "":
	case os.Geteuid() == 0:
		base = "/run/sandbox-executable"
	case filepath.IsAbs(os.Getenv("XDG_RUNTIME_DIR")):
		base = filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "sandbox-executable")
	default:
		base = filepath.Join(os.TempDir(), "sandbox-executable-"+strconv.Itoa(os.Geteuid()))
	}
	dir := filepath.Join(base, "placeholders")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("placeholder registry: %w", err)
	}
	for _, d := range []string{base, dir} {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return "", fmt.Errorf("placeholder registry: %w", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
			return "", fmt.Errorf("placeholder registry: %s is not a private directory of this user", d)
		}
	}
	return dir, nil
}

// ClaimPlaceholders locks every path and creates the ones that are missing as
// empty directories (mode 0700). Release must be called after the run.
func ClaimPlaceholders(paths []string) (*Claims, error) {
	c := &Claims{}
	if len(paths) == 0 {
		return c, nil
	}
	dir, err := registryDir()
	if err != nil {
		return nil, err
	}
	c.dir = dir
	for _, p := range paths {
		cl, err := c.claimOne(p)
		if err != nil {
			c.Release()
			return nil, err
		}
		c.locks = append(c.locks, cl)
	}
	return c, nil
}

func (c *Claims) claimOne(path string) (*claim, error) {
	sum := sha256.Sum256([]byte(path))
	key := hex.EncodeToString(sum[:16])
	lockPath := filepath.Join(c.dir, key+".lock")
	for {
		f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("placeholder %s: lock: %w", path, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
			f.Close()
			return nil, fmt.Errorf("placeholder %s: lock: %w", path, err)
		}
		// The last user of a placeholder unlinks the lock file while it
		// holds it exclusively: make sure ours is still the one in place.
		if same(f, lockPath) {
			cl := &claim{path: path, key: key, lock: f}
			if err := c.ensure(cl); err != nil {
				f.Close()
				return nil, err
			}
			return cl, nil
		}
		f.Close()
	}
}

// ensure creates the placeholder when nothing is at its path, and records it.
func (c *Claims) ensure(cl *claim) error {
	err := unix.Mkdir(cl.path, 0o700)
	if errors.Is(err, unix.EEXIST) {
		return nil // a real entry, or another sandbox's placeholder
	}
	if err != nil {
		return fmt.Errorf("placeholder %s: %w", cl.path, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(cl.path, &st); err != nil {
		return fmt.Errorf("placeholder %s: %w", cl.path, err)
	}
	rec := fmt.Sprintf("%d %d %s\n", st.Dev, st.Ino, cl.path)
	if err := os.WriteFile(filepath.Join(c.dir, cl.key+".rec"), []byte(rec), 0o600); err != nil {
		_ = unix.Rmdir(cl.path)
		return fmt.Errorf("placeholder %s: record: %w", cl.path, err)
	}
	return nil
}

// Release gives up the claims; the last user of a placeholder removes it.
func (c *Claims) Release() {
	if c == nil {
		return
	}
	for _, cl := range c.locks {
		if unix.Flock(int(cl.lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			c.removeIfOurs(cl)
			_ = os.Remove(filepath.Join(c.dir, cl.key+".lock"))
		}
		cl.lock.Close()
	}
	c.locks = nil
}

// removeIfOurs removes the placeholder when it is still the empty directory
// the record names.
func (c *Claims) removeIfOurs(cl *claim) {
	recPath := filepath.Join(c.dir, cl.key+".rec")
	b, err := os.ReadFile(recPath)
	if err != nil {
		return // not a placeholder of ours: a real entry
	}
	f := strings.Fields(string(b))
	var st unix.Stat_t
	if len(f) >= 2 && unix.Lstat(cl.path, &st) == nil &&
		strconv.FormatUint(st.Dev, 10) == f[0] && strconv.FormatUint(st.Ino, 10) == f[1] {
		// rmdir fails on a non-empty directory: then somebody outside
		// the sandbox put something in it, and it stays.
		if unix.Rmdir(cl.path) != nil {
			return
		}
	}
	_ = os.Remove(recPath)
}

// same reports whether f is the file now at path.
func same(f *os.File, path string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Stat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}
