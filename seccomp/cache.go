package seccomp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
)

// Cache keeps compiled programs between runs. An entry is loaded only when
// it is provably the helper's own: each is the program preceded by an
// HMAC-SHA256 tag, under Key, of its name (which hashes everything that went
// into the program) and the program. A sandboxed program that could write
// the directory still could not forge an entry without the key, nor pass off
// one policy's program as another's; a truncated or otherwise changed entry
// fails the check like a forged one, and is compiled again and replaced.
type Cache struct {
	// Dir holds the entries; it must be private (see runstate).
	Dir string
	// Key is the secret the tags are made with; it must be unreadable to
	// every sandbox (see runstate.Key).
	Key []byte
	// ReadOnly loads entries but never writes one (--explain writes
	// nothing): a program compiled for want of an entry is not stored.
	ReadOnly bool
}

// Where a program came from (Program.Cache).
const (
	CacheOff      = "off"      // no cache was given
	CacheLoaded   = "loaded"   // an authenticated entry
	CacheCompiled = "compiled" // no entry: compiled, and stored (unless ReadOnly)
	CacheRejected = "rejected" // an entry that failed the checks: compiled, and replaced
)

// cacheFormat changes whenever what a cached program means, or how an entry
// is laid out, changes. Format 1 entries (no tag) are never read.
const cacheFormat = "2"

// tagSize is the length of an entry's tag.
const tagSize = sha256.Size

// maxProgram is the largest program the kernel loads (BPF_MAXINSNS
// instructions of 8 bytes).
const maxProgram = 4096 * 8

// cacheKey names a compiled program by everything that went into it: the
// format, libseccomp's version, the architecture, the options, and every
// field of every rule, each length-prefixed. Written out by hand: in a
// fresh process encoding/json took 0.2 ms here. TestCacheKeyCoversRules
// fails when a rule gains a field this does not write.
func cacheKey(s *policy.Seccomp, opt Options) string {
	var b []byte
	str := func(v string) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	u64 := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	str(cacheFormat)
	str(LibraryVersion())
	str(runtime.GOARCH)
	b = append(b, boolByte(opt.Notify))
	u64(uint64(len(s.Rules)))
	for _, r := range s.Rules {
		str(r.Syscall)
		str(string(r.Action))
		str(r.Errno)
		str(r.Why)
		u64(uint64(len(r.Args)))
		for _, a := range r.Args {
			u64(uint64(a.Index))
			str(a.Op)
			u64(a.Value)
			u64(a.Mask)
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// tag authenticates the program bpf under the name name.
func (c *Cache) tag(name string, bpf []byte) []byte {
	m := hmac.New(sha256.New, c.Key)
	m.Write([]byte("sandbox-executable seccomp cache " + cacheFormat + "\x00" + name + "\x00"))
	m.Write(bpf)
	return m.Sum(nil)
}

// errMissing is an entry that is not there: a plain miss.
var errMissing = errors.New("no entry")

// load reads the program named name back. An entry that is missing returns
// errMissing; one that cannot be trusted returns what is wrong with it.
func (c *Cache) load(name string) ([]byte, error) {
	fd, err := unix.Open(filepath.Join(c.Dir, name), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, errMissing
	}
	if err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("cache entry %s: not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, tagSize+maxProgram+1))
	if err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", name, err)
	}
	return c.open(name, b)
}

// open checks the entry b named name and returns its program.
func (c *Cache) open(name string, b []byte) ([]byte, error) {
	n := len(b) - tagSize
	if n <= 0 || n%8 != 0 || n > maxProgram {
		return nil, fmt.Errorf("cache entry %s: %d bytes is not a tag and a whole program (truncated or not written by this helper)", name, len(b))
	}
	tag, bpf := b[:tagSize], b[tagSize:]
	if !hmac.Equal(tag, c.tag(name, bpf)) {
		return nil, fmt.Errorf("cache entry %s: its tag does not verify under this user's key (changed, or not written by this helper)", name)
	}
	return bpf, nil
}

// seal is the entry for the program bpf named name.
func (c *Cache) seal(name string, bpf []byte) []byte {
	return append(c.tag(name, bpf), bpf...)
}

// store writes the program under its name, atomically (a temp file then a
// rename), so that a concurrent reader sees all of it or nothing.
func (c *Cache) store(name string, bpf []byte) {
	if c.ReadOnly {
		return
	}
	f, err := os.CreateTemp(c.Dir, name+".tmp-")
	if err != nil {
		return
	}
	_, werr := f.Write(c.seal(name, bpf))
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if os.Rename(f.Name(), filepath.Join(c.Dir, name)) != nil {
		os.Remove(f.Name())
	}
}
