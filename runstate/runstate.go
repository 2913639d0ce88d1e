// Package runstate is the helper's private directory for state shared
// between runs: placeholder locks, the compiled-filter cache and the key
// that authenticates it. It is made on first use, one per user, in a place
// that depends on the user and the filesystem alone, never on the
// environment the caller passes (a run without XDG_RUNTIME_DIR must find
// the same directory as a run with it). Where that is, is decided by one
// rule, in C, which the warm path follows before Go starts and which this
// package asks (spawn.StateWhere; spawn/statedir.h has the rule):
//
//   - root: /run/sandbox-executable;
//   - any other user: /run/user/UID/sandbox-executable when /run/user/UID is
//     a directory of the user's own with mode 0700 (what systemd-logind
//     makes for a session), else /tmp/sandbox-executable-UID, unless
//     another user took that name first, then
//     HOME/.local/state/sandbox-executable (HOME from /etc/passwd), a place
//     nobody but the user can make.
//
// Every directory it makes is created 0700 and checked, before it is used,
// to be a real directory (not a symbolic link), owned by the user, with no
// rights for group or others. Nothing in it is trusted on those checks
// alone: a sandboxed program runs as the same user, so every sandbox is
// denied the directory, and the places it would move to (see Protected),
// and what is read back from it is authenticated (see Key).
package runstate

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
	"sandbox-executable/spawn"
)

// Base overrides the location of the directory (tests). It must exist; it
// is trusted as it is (the subdirectories made in it are checked).
var Base string

// KeySize is the length of the key, in bytes.
const KeySize = 32

// keyName is the key's file in the state directory.
const keyName = "key"

// where are the places of the state directory of the user euid (with all:
// also where it would go were it gone: for a user whose state is in
// /run/user/UID, the /tmp place and the home place; for one whose state is
// in /tmp, the home place; which every sandbox is denied too, so that none
// can make one first and plant state there for a later run). Asked anew
// each time: a place may come or go while a process runs (a login makes
// /run/user/UID).
func where(euid int, all bool) spawn.StatePlaces {
	if Base != "" {
		return spawn.StatePlaces{Dir: Base}
	}
	return spawn.StateWhere(euid, all)
}

// location is the state directory of the user euid, or an error saying
// why there is none.
func location(euid int) (string, error) {
	p := where(euid, false)
	if p.Dir == "" {
		return "", fmt.Errorf("state directory: none can be had: %s; ask the owner (or root) to remove it", p.Passed)
	}
	return p.Dir, nil
}

// Moved says why the state directory is not in /tmp where it would be
// ("" when it is there, or elsewhere for another reason): another user
// took the name first. doctor shows it.
func Moved() string {
	return where(os.Geteuid(), true).Passed
}

// Dir returns the private subdirectory sub of the state directory ("" for
// the state directory itself), made if missing. It refuses a directory that
// is not this user's own private directory, with what is wrong with it.
func Dir(sub string) (string, error) {
	euid := os.Geteuid()
	base, err := location(euid)
	if err != nil {
		return "", err
	}
	if Base == "" {
		if err := ensure(base, euid); err != nil {
			return "", err
		}
	}
	if sub == "" {
		return base, nil
	}
	dir := filepath.Join(base, sub)
	if err := ensure(dir, euid); err != nil {
		return "", err
	}
	return dir, nil
}

// Protected returns the directories no sandbox may read or write: the state
// directory and the places it would move to (made here when missing, so
// that a sandbox that can write their parents cannot make them first). A
// later place that cannot be made private (another user's) is left out:
// this user's runs pass over it too.
func Protected() ([]string, error) {
	euid := os.Geteuid()
	base, err := location(euid)
	if err != nil {
		return nil, err
	}
	if Base == "" {
		if err := ensure(base, euid); err != nil {
			return nil, err
		}
	}
	dirs := []string{base}
	for _, d := range where(euid, true).Later {
		if ensure(d, euid) == nil {
			dirs = append(dirs, d)
		}
	}
	return dirs, nil
}

// Locations returns the directories Protected returns, without making
// any: what --explain shows, which writes nothing. A directory that does
// not exist yet is in the list all the same (a run makes it first).
func Locations() []string {
	p := where(os.Geteuid(), true)
	if p.Dir == "" {
		return nil
	}
	return append([]string{p.Dir}, p.Later...)
}

// Lookup returns the subdirectory sub of the state directory ("" for the
// state directory itself) when it exists and passes Dir's checks, without
// making anything.
func Lookup(sub string) (string, error) {
	euid := os.Geteuid()
	base, err := location(euid)
	if err != nil {
		return "", err
	}
	dir := base
	if sub != "" {
		dir = filepath.Join(base, sub)
	}
	if Base == "" || sub != "" {
		if err := checkParent(filepath.Dir(dir), euid); err != nil {
			return "", err
		}
		if err := checkPrivate(dir, euid); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// LookupKey returns the key Key would return when there is one, without
// making or replacing it.
func LookupKey() ([]byte, error) {
	dir, err := Lookup("")
	if err != nil {
		return nil, err
	}
	return readKey(filepath.Join(dir, keyName))
}

// ensured are the directories ensure made or checked already in this
// decision: their checks say nobody but this user (or root) can replace
// them meanwhile, so a run checks each once, not at every use. A process
// that lives on (the resident decider) checks again in its next decision:
// meanwhile a reboot may have emptied /tmp, and someone else taken a name.
var ensured fsdeps.Memo[*ensuredDirs]

type ensuredDirs struct {
	sync.Mutex
	dirs map[string]int // dir: euid
}

// ensure makes dir (mode 0700) unless it exists, and checks that it is this
// user's private directory in a parent that nobody else can rename it out of.
func ensure(dir string, euid int) error {
	e := ensured.Get(func() *ensuredDirs { return &ensuredDirs{dirs: map[string]int{}} })
	e.Lock()
	defer e.Unlock()
	if u, ok := e.dirs[dir]; ok && u == euid {
		return nil
	}
	if err := ensureNow(dir, euid); err != nil {
		return err
	}
	e.dirs[dir] = euid
	return nil
}

func ensureNow(dir string, euid int) error {
	err := unix.Mkdir(dir, 0o700)
	if errors.Is(err, unix.ENOENT) {
		// The home place's parents (~/.local/state) may be missing:
		// made as the XDG spec makes them, 0700. (The other places'
		// parents exist whenever the rule names them.)
		if err = makeParents(filepath.Dir(dir)); err == nil {
			err = unix.Mkdir(dir, 0o700)
		}
	}
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	if err := checkParent(filepath.Dir(dir), euid); err != nil {
		return err
	}
	return checkPrivate(dir, euid)
}

// makeParents makes dir and its missing ancestors, mode 0700.
func makeParents(dir string) error {
	err := unix.Mkdir(dir, 0o700)
	if errors.Is(err, unix.ENOENT) && filepath.Dir(dir) != dir {
		if err = makeParents(filepath.Dir(dir)); err == nil {
			err = unix.Mkdir(dir, 0o700)
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return err
}

// checkPrivate checks that dir is a directory, not a link, owned by euid,
// with no rights for group or others.
func checkPrivate(dir string, euid int) error {
	fi, err := fsdeps.Lstat(dir)
	if err != nil {
		return fmt.Errorf("state directory %s: %w", dir, bare(err))
	}
	mode := fi.RawMode()
	switch {
	case !fi.IsDir():
		return fmt.Errorf("state directory %s: not a directory (a symbolic link or a file is never followed): remove it", dir)
	case int(fi.UID()) != euid:
		return fmt.Errorf("state directory %s: owned by uid %d, not by this user (uid %d): remove it", dir, fi.UID(), euid)
	case mode&0o077 != 0:
		return fmt.Errorf("state directory %s: mode %04o gives rights to group or others; it must be 0700 (chmod 700 %s)", dir, mode&0o7777, dir)
	}
	return nil
}

// bare is the errno inside a filesystem error, as the system call gave
// it (the messages name the path themselves).
func bare(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// checkParent checks that nobody but root and euid can replace entries of
// dir: owned by one of them, and writable by others only with the sticky
// bit (/tmp).
func checkParent(dir string, euid int) error {
	fi, err := fsdeps.Stat(dir)
	if err != nil {
		return fmt.Errorf("state directory: parent %s: %w", dir, bare(err))
	}
	mode := fi.RawMode()
	if fi.UID() != 0 && int(fi.UID()) != euid {
		return fmt.Errorf("state directory: parent %s is owned by uid %d: another user could replace the state directory", dir, fi.UID())
	}
	if mode&0o022 != 0 && mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("state directory: parent %s (mode %04o) is writable by others and not sticky: another user could replace the state directory", dir, mode&0o7777)
	}
	return nil
}

// Key returns this user's secret key, which authenticates what the helper
// keeps in the state directory (KeySize random bytes in its file "key",
// mode 0600), making it on first use. A key file that is not this user's
// own private regular file of the right size is replaced with a new key
// (which invalidates whatever the old one authenticated). The file is in the
// state directory, which every sandbox is denied, so no sandboxed program
// can read it.
func Key() ([]byte, error) {
	dir, err := Dir("")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, keyName)
	key, err := readKey(path)
	if err == nil {
		return key, nil
	}
	replace := !errors.Is(err, fs.ErrNotExist)
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	f, err := os.CreateTemp(dir, keyName+".tmp-") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, werr := f.Write(key)
	if cerr := f.Close(); werr != nil || cerr != nil {
		return nil, fmt.Errorf("state key: write %s: %w", tmp, errors.Join(werr, cerr))
	}
	if replace {
		if err := os.Rename(tmp, path); err != nil {
			return nil, fmt.Errorf("state key: %w", err)
		}
		return key, nil
	}
	// A link, not a rename: of two first runs at once, one key wins and
	// the other run reads it.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKey(path)
		}
		return nil, fmt.Errorf("state key: %w", err)
	}
	return key, nil
}

// readKey reads the key at path, refusing anything but this user's private
// regular file of KeySize bytes. The read is recorded by the file's
// metadata (fsdeps.ReadNoFollow), never by its content.
func readKey(path string) ([]byte, error) {
	f, err := fsdeps.ReadNoFollow(path, KeySize)
	var pe *fs.PathError
	switch {
	case err == nil:
	case errors.Is(err, unix.ENOENT) && errors.As(err, &pe) && pe.Op == "open":
		return nil, fs.ErrNotExist
	case errors.As(err, &pe) && pe.Op == "read":
		return nil, fmt.Errorf("state key %s: %w", path, err)
	default:
		return nil, fmt.Errorf("state key %s: %w", path, bare(err))
	}
	if !f.Info.IsRegular() || int(f.Info.UID()) != os.Geteuid() || f.Info.RawMode()&0o077 != 0 || f.Size != KeySize {
		return nil, fmt.Errorf("state key %s: not a private file of %d bytes of this user", path, KeySize)
	}
	if len(f.Data) != KeySize {
		return nil, fmt.Errorf("state key %s: %w", path, io.ErrUnexpectedEOF)
	}
	return f.Data, nil
}
