// Package writeback writes what a run added to a scratch cache back to the
// host's cache (--persist-cache): the overlay's upper layer, once the
// program and everything it started are gone, is merged into the cache
// directory, adding only what the cache does not have.
//
// Only new names are written: a file the run changed or removed in the
// cache, a file it made where the cache has one, stays as the host has it.
// Only directories and regular files are written, without set-id bits or
// write permission for others; links, devices, FIFOs and sockets are not.
// Every step goes through os.Root, on both sides, so no link in either
// tree leads a write outside the cache. A file is written under a
// temporary name and then linked to its own, which fails where the name
// appeared meanwhile: a concurrent build's entry is never replaced.
package writeback

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// Stats says what a merge did.
type Stats struct {
	Files, Dirs int
	Bytes       int64
	// Kept counts entries the cache had already (changed or replaced in
	// the run), or that appeared meanwhile: not written.
	Kept int
	// Skipped counts what is never written back: links, devices, FIFOs,
	// sockets, and the overlay's whiteouts (what the run removed).
	Skipped int
}

func (s Stats) String() string {
	return fmt.Sprintf("%d files (%d bytes) and %d directories added; %d kept as the cache had them, %d not written back (links, special files, removals)",
		s.Files, s.Bytes, s.Dirs, s.Kept, s.Skipped)
}

// Merge adds to dst (the host's cache) what upper (the run's upper layer
// of it) holds and dst does not. It stops at the first error it cannot
// step over; what it added until then stays.
func Merge(upper, dst *os.Root) (Stats, error) {
	var st Stats
	err := merge(upper, dst, ".", &st)
	return st, err
}

func merge(upper, dst *os.Root, dir string, st *Stats) error {
	d, err := upper.Open(dir)
	if err != nil {
		return err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, e := range ents {
		rel := path.Join(dir, e.Name())
		fi, err := upper.Lstat(rel)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if di, err := dst.Lstat(rel); err == nil {
				if !di.IsDir() {
					st.Kept++
					continue
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			} else if err := dst.Mkdir(rel, safePerm(fi.Mode())|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			} else if err == nil {
				st.Dirs++
			}
			if err := merge(upper, dst, rel, st); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if _, err := dst.Lstat(rel); err == nil {
				st.Kept++
				continue
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			n, added, err := copyNew(upper, dst, rel, safePerm(fi.Mode()))
			if err != nil {
				return err
			}
			if added {
				st.Files++
				st.Bytes += n
			} else {
				st.Kept++
			}
		default:
			st.Skipped++
		}
	}
	return nil
}

// safePerm is a mode's permission bits without set-id, sticky, or write
// for the group and others.
func safePerm(m fs.FileMode) fs.FileMode { return m.Perm() &^ 0o022 }

// copyNew copies upper's rel to dst's rel under a temporary name, then
// links it to rel: added is false when rel appeared meanwhile.
func copyNew(upper, dst *os.Root, rel string, perm fs.FileMode) (n int64, added bool, err error) {
	src, err := upper.Open(rel)
	if err != nil {
		return 0, false, err
	}
	defer src.Close()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, false, err
	}
	tmp := path.Join(path.Dir(rel), ".sandbox-executable-"+hex.EncodeToString(b[:]))
	out, err := dst.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return 0, false, err
	}
	defer dst.Remove(tmp)
	n, err = io.Copy(out, src)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, false, err
	}
	if err := dst.Chmod(tmp, perm); err != nil { // the umask narrowed it
		return 0, false, err
	}
	if err := dst.Link(tmp, rel); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	return n, true, nil
}
