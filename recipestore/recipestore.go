// Package recipestore keeps recipes: a run's complete decision, as Go made
// it, stored under the invocation's recipe key (spawn.RecipeKey) so that a
// later run of the same invocation can be carried out before the Go
// runtime starts. Go stores and removes entries; only the C side of the
// helper looks them up (spawn/recipestore.h, se_recipe_lookup), and the
// tests look through it too (spawn's recipestore_test.go).
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
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sandbox-executable/runstate"
)

const (
	// Magic starts every entry.
	Magic = "SERECIP1"
	// MaxBody is the largest body stored or accepted.
	MaxBody = 4 << 20
	// MaxEntries is the most entries the directory keeps: a store that
	// leaves more removes the oldest (by modification time) down to
	// PrunedTo. The gap makes the pass that reads every entry's time rare:
	// in a full directory it cost more than the store itself.
	MaxEntries = 256
	// PrunedTo is how many entries a store that found too many leaves.
	PrunedTo = MaxEntries - MaxEntries/4
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

// prune keeps the directory at most MaxEntries entries, removing the
// oldest down to PrunedTo when there are more, and removes the temporary
// files of stores that died before their rename. Races with other runs
// pruning or storing are harmless: an entry removed twice is gone, and one
// removed just after it was stored is a miss, which Go answers by deciding
// again.
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
	for _, e := range entries[:max(len(entries)-PrunedTo, 0)] {
		os.Remove(filepath.Join(dir, e.name))
	}
}
