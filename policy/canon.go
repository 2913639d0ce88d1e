package policy

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"sandbox-executable/fsdeps"
)

// maxSymlinks bounds the symlinks followed while resolving one path, as the
// kernel's ELOOP limit does.
const maxSymlinks = 40

// canonical is a path resolved by resolveLenient.
type canonical struct {
	// Path is absolute and clean; its longest existing prefix has every
	// symlink resolved, the rest is appended lexically.
	Path string
	// Exists says whether Path itself exists.
	Exists bool
	// Link, when the given path's last component is a symlink, is that
	// symlink's own path (its parent canonical). Path is then the link's
	// resolved target.
	Link string
}

// statMemo remembers, for one Resolve call, what lstat and readlink said
// of each path walked: the home directory alone is a component of some
// thirty paths a default policy resolves. A nil memo remembers nothing.
// Not safe for concurrent use (one resolver is used by one goroutine).
type statMemo struct {
	lstat map[string]lstatAnswer
	link  map[string]linkAnswer
}

type lstatAnswer struct {
	fi  fsdeps.Info
	err error
}

type linkAnswer struct {
	target string
	err    error
}

func newStatMemo() *statMemo {
	return &statMemo{lstat: map[string]lstatAnswer{}, link: map[string]linkAnswer{}}
}

func (m *statMemo) lstatPath(p string) (fsdeps.Info, error) {
	if m == nil {
		return fsdeps.Lstat(p)
	}
	if a, ok := m.lstat[p]; ok {
		return a.fi, a.err
	}
	fi, err := fsdeps.Lstat(p)
	m.lstat[p] = lstatAnswer{fi, err}
	return fi, err
}

func (m *statMemo) readlink(p string) (string, error) {
	if m == nil {
		return fsdeps.Readlink(p)
	}
	if a, ok := m.link[p]; ok {
		return a.target, a.err
	}
	t, err := fsdeps.Readlink(p)
	m.link[p] = linkAnswer{t, err}
	return t, err
}

// resolveLenient canonicalizes the absolute path p like realpath(3) but
// without requiring p to exist: components are resolved one by one through
// symlinks (so ".." after a symlink means the target's parent, as for the
// kernel). A component that does not exist (or a non-directory in the
// middle) and what follows it are taken lexically, until a ".." climbs back
// out of them: resolution then resumes, so that "missing/../link/x" names
// the link's target, as it will once "missing" is created. A component that
// cannot be examined (EACCES) is treated like a missing one: a sandboxed
// process with the same credentials cannot get past it either.
func (m *statMemo) resolveLenient(p string) (canonical, error) {
	c, _, err := m.walkPath(p, true)
	return c, err
}

// walkPath resolves the absolute path p component by component, as the
// kernel does, and returns with it every symlink it followed, in order:
// each one's own path, with its parent canonical (so that where a link lies
// can be judged by its real location). Lenient is resolveLenient's mode;
// otherwise every component must exist and every one but the last must be
// a directory, and the first that is not ends the walk with its error
// (the strict mode of resolveExisting).
func (m *statMemo) walkPath(p string, lenient bool) (canonical, []string, error) {
	if !filepath.IsAbs(p) {
		return canonical{}, nil, errors.New("not an absolute path")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return canonical{}, nil, errors.New("contains a NUL byte")
	}
	todo := splitComponents(p)
	resolved := "/"
	var missing []string // taken lexically beneath resolved
	var followed []string
	var link string
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			if len(missing) > 0 {
				missing = missing[:len(missing)-1]
			} else {
				resolved = filepath.Dir(resolved)
			}
			continue
		}
		if len(missing) > 0 {
			missing = append(missing, c)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := m.lstatPath(next)
		if err != nil {
			if lenient && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrPermission)) {
				missing = append(missing, c)
				continue
			}
			return canonical{}, followed, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !lenient && len(todo) > 0 && !fi.IsDir() {
				// "file/..", "file/x": the kernel says ENOTDIR.
				return canonical{}, followed, &fs.PathError{Op: "lstat", Path: next + "/" + todo[0], Err: syscall.ENOTDIR}
			}
			resolved = next
			continue
		}
		followed = append(followed, next)
		if len(followed) > maxSymlinks {
			return canonical{}, followed, syscall.ELOOP
		}
		target, err := m.readlink(next)
		if err != nil {
			return canonical{}, followed, err
		}
		if len(todo) == 0 && link == "" {
			// The given path's own last component is a symlink.
			link = next
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		todo = append(splitComponents(target), todo...)
	}
	if len(missing) > 0 {
		return canonical{Path: filepath.Join(append([]string{resolved}, missing...)...), Link: link}, followed, nil
	}
	return canonical{Path: resolved, Exists: true, Link: link}, followed, nil
}

// splitComponents splits a path into its components, dropping empty ones
// and ".".
func splitComponents(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// resolveExisting canonicalizes a path that must exist, as the kernel
// resolves it (the result of filepath.EvalSymlinks + Clean, but with ".."
// after a non-directory an error, as for the kernel), reports a failure as
// "<path>: <reason>", and returns the symlinks followed on the way (see
// walkPath).
func resolveExisting(p string) (string, []string, error) {
	return (*statMemo)(nil).resolveExisting(p)
}

// resolveExisting is resolveExisting through the memo.
func (m *statMemo) resolveExisting(p string) (string, []string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", nil, errors.New(quote(p) + ": contains a NUL byte")
	}
	c, links, err := m.walkPath(p, false)
	if err != nil {
		return "", nil, errors.New(plain(p) + ": " + errnoText(err))
	}
	return c.Path, links, nil
}

// errnoText is the reason part of a filesystem error ("no such file or
// directory"), without the operation and path os errors carry.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
