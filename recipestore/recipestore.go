// Package recipestore keeps recipes: a run's complete decision, as Go made
// it, stored under the invocation's recipe key (spawn.RecipeKey) so that a
// later run of the same invocation can be carried out before the Go
// runtime starts. The C side of the helper looks entries up
// (spawn/recipestore.h, se_recipe_lookup); Lookup here checks exactly what
// it checks, for tests and for tools that show what is stored.
//
// An entry is the file recipes/<hex of the key> in the state directory
// (runstate.Dir("recipes")):
//
//	"SERECIP1"      8 bytes, the magic
//	u32 LE          the body's length, at most MaxBody
//	key             32 bytes, the key it is stored under
//	mac             32 bytes, HMAC-SHA256(runstate.Key(), magic || length || key || body)
//	body            the recipe
//
// The state directory is private to the user, but a sandboxed program runs
// as the same user: what is read back is trusted only when the user's
// secret key authenticates it, and only under the key it was stored for.
package recipestore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/runstate"
)

const (
	// Magic starts every entry.
	Magic = "SERECIP1"
	// MaxBody is the largest body stored or accepted.
	MaxBody = 4 << 20
	// MaxEntries is how many entries the directory keeps: a store that
	// leaves more removes the oldest (by modification time).
	MaxEntries = 256
	// KeySize is the length of a recipe key.
	KeySize = 32

	headerSize = len(Magic) + 4 + KeySize + sha256.Size
	subdir     = "recipes"
	tmpPrefix  = ".tmp-"
	// staleTmp is the age past which a temporary file is taken for the
	// leftover of a store that died before its rename.
	staleTmp = 10 * time.Minute
)

// Store writes body as the recipe for key, replacing any recipe stored
// under it. Concurrent stores of the same key are safe: each writes a
// file of its own and renames it into place, and the last one stays.
func Store(key [KeySize]byte, body []byte) error {
	if len(body) > MaxBody {
		return fmt.Errorf("recipe %x: body of %d bytes, more than %d", key[:4], len(body), MaxBody)
	}
	dir, err := runstate.Dir(subdir)
	if err != nil {
		return fmt.Errorf("recipe store: %w", err)
	}
	secret, err := runstate.Key()
	if err != nil {
		return fmt.Errorf("recipe store: %w", err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix) // O_EXCL, mode 0600
	if err != nil {
		return fmt.Errorf("recipe store: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename, a no-op
	_, werr := f.Write(encode(secret, key, body))
	if cerr := f.Close(); werr != nil || cerr != nil {
		return fmt.Errorf("recipe store: write %s: %w", tmp, errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp, filepath.Join(dir, name(key))); err != nil {
		return fmt.Errorf("recipe store: %w", err)
	}
	prune(dir)
	return nil
}

// Remove deletes the recipe stored under key, if any: what a run does
// when Go decides differently from it.
func Remove(key [KeySize]byte) error {
	dir, err := runstate.Lookup(subdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("recipe remove: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, name(key))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("recipe remove: %w", err)
	}
	return nil
}

// Lookup returns the body stored under key, with the checks the C lookup
// makes: the state directory and its "recipes" as runstate.Lookup checks
// them, the entry and the key file the user's private regular files
// (never a link), the magic, the length, the key it was stored under and
// its MAC. An error that wraps fs.ErrNotExist means nothing is stored.
//
// With runstate.Base set (tests), runstate checks the state directory
// itself less than the C lookup with its base set does: the C side checks
// that directory and its parent as it checks the normal one.
func Lookup(key [KeySize]byte) ([]byte, error) {
	dir, err := runstate.Lookup(subdir)
	if err != nil {
		return nil, fmt.Errorf("recipe lookup: %w", err)
	}
	path := filepath.Join(dir, name(key))
	f, err := readPrivate(path, headerSize, headerSize+MaxBody)
	if err != nil {
		return nil, err
	}
	blen := binary.LittleEndian.Uint32(f[len(Magic):])
	switch {
	case string(f[:len(Magic)]) != Magic:
		return nil, fmt.Errorf("recipe %s: no %s magic", path, Magic)
	case int64(blen) != int64(len(f)-headerSize):
		return nil, fmt.Errorf("recipe %s: body length %d in a file of %d bytes", path, blen, len(f))
	case string(f[len(Magic)+4:len(Magic)+4+KeySize]) != string(key[:]):
		return nil, fmt.Errorf("recipe %s: stored under another key", path)
	}
	secret, err := runstate.LookupKey()
	if err != nil {
		return nil, fmt.Errorf("recipe lookup: %w", err)
	}
	body := f[headerSize:]
	want := mac(secret, f[:len(Magic)+4+KeySize], body)
	if !hmac.Equal(want, f[len(Magic)+4+KeySize:headerSize]) {
		return nil, fmt.Errorf("recipe %s: not authenticated by this user's key", path)
	}
	return body, nil
}

// name is an entry's file name: the key in lowercase hex.
func name(key [KeySize]byte) string { return hex.EncodeToString(key[:]) }

// isEntry reports whether n is an entry's name.
func isEntry(n string) bool {
	if len(n) != 2*KeySize {
		return false
	}
	for _, c := range n {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// encode is an entry's content.
func encode(secret []byte, key [KeySize]byte, body []byte) []byte {
	b := make([]byte, 0, headerSize+len(body))
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, key[:]...)
	b = append(b, mac(secret, b, body)...)
	return append(b, body...)
}

// mac is HMAC-SHA256(secret, head || body).
func mac(secret, head, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(head)
	m.Write(body)
	return m.Sum(nil)
}

// readPrivate reads path whole: the user's regular file, not a link, with
// no rights for group or others, of lo..hi bytes.
func readPrivate(path string, lo, hi int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("recipe %s: %w", path, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("recipe %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("recipe %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("recipe %s: not a regular file", path)
	case int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("recipe %s: owned by uid %d, not by this user", path, st.Uid)
	case st.Mode&0o077 != 0:
		return nil, fmt.Errorf("recipe %s: mode %04o gives rights to group or others", path, st.Mode&0o7777)
	case st.Size < int64(lo) || st.Size > int64(hi):
		return nil, fmt.Errorf("recipe %s: %d bytes, not %d to %d", path, st.Size, lo, hi)
	}
	b := make([]byte, st.Size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("recipe %s: %w", path, err)
	}
	return b, nil
}

// prune keeps the directory at MaxEntries entries, removing the oldest,
// and removes the temporary files of stores that died before their
// rename. Races with other runs pruning or storing are harmless: an entry
// removed twice is gone, and one removed just after it was stored is a
// miss, which Go answers by deciding again.
func prune(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type entry struct {
		name  string
		mtime time.Time
	}
	var entries []entry
	count := 0
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, tmpPrefix) {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTmp {
				os.Remove(filepath.Join(dir, n))
			}
			continue
		}
		if isEntry(n) {
			count++
		}
	}
	if count <= MaxEntries {
		return
	}
	for _, e := range ents {
		if n := e.Name(); isEntry(n) {
			if info, err := e.Info(); err == nil {
				entries = append(entries, entry{n, info.ModTime()})
			}
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].mtime.Before(entries[j].mtime) })
	for _, e := range entries[:max(len(entries)-MaxEntries, 0)] {
		os.Remove(filepath.Join(dir, e.name))
	}
}
