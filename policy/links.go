package policy

import (
	"io/fs"
	"path/filepath"

	"sandbox-executable/fsdeps"
)

// grantTrace is one path given to become writable (a writable root or the
// policy cwd) with the symlinks its resolution followed, and how to report
// a refusal of it.
type grantTrace struct {
	links []string // see walkPath
	fail  func(msg string) *Error
}

// refusePlantedLinks refuses a grant whose path passes through a symlink a
// sandboxed program could have made: one inside a writable root of this
// policy (an earlier run with the same workspace, or this run's program
// racing the next), or beneath a world-writable or sticky directory (/tmp,
// /var/tmp, /dev/shm: any user, and any sandbox that could write there).
// Following such a link would let its maker choose what becomes writable:
// "ln -s ~ WS/project" and then a run with the cwd WS/project. Links
// elsewhere (~/code -> /data/code, /var/run -> /run, a usrmerge /bin) are
// the user's or the system's and still resolve.
//
// roots are the canonical writable roots (the cwd included), every trace's
// links are checked against all of them.
func (r *resolver) refusePlantedLinks(roots []WritablePath, traces []grantTrace) error {
	for _, tr := range traces {
		for _, link := range tr.links {
			for _, root := range roots {
				if Beneath(link, root.Path) {
					return tr.fail(plain(link) + " is a symbolic link inside the writable root " + plain(root.Path) +
						", which a sandboxed program could have planted; refusing to follow it")
				}
			}
			if dir, kind, ok := r.sharedAncestor(link); ok {
				where := "beneath"
				if dir == filepath.Dir(link) {
					where = "in"
				}
				return tr.fail(plain(link) + " is a symbolic link " + where + " " + plain(dir) + ", " + kind + ", where another user or a sandboxed program could have planted it; refusing to follow it")
			}
		}
	}
	return nil
}

// sharedAncestor returns the deepest directory above the canonical path p
// that is world-writable or sticky, and a description of it ("a
// world-writable directory").
func (r *resolver) sharedAncestor(p string) (dir, kind string, ok bool) {
	if r.sharedDirs == nil {
		r.sharedDirs = map[string]string{}
	}
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		k, seen := r.sharedDirs[d]
		if !seen {
			k = sharedDirKind(d)
			r.sharedDirs[d] = k
		}
		if k != "" {
			return d, k, true
		}
		if d == "/" {
			return "", "", false
		}
	}
}

// sharedDirKind says whether the directory d is writable by others: "a
// world-writable directory", "a sticky directory" (a sticky directory
// exists to be shared), or "" for neither. A directory that cannot be examined counts as shared: the
// check fails closed. A variable so that tests can confine it to their own
// tree (every temp dir lies beneath the world-writable /tmp).
var sharedDirKind = modeSharedDirKind

// modeSharedDirKind is sharedDirKind from the directory's mode.
func modeSharedDirKind(d string) string {
	fi, err := fsdeps.Lstat(d)
	if err != nil {
		return "a directory that could not be examined (" + errnoText(err) + ")"
	}
	switch {
	case fi.Mode().Perm()&0o002 != 0:
		return "a world-writable directory"
	case fi.Mode()&fs.ModeSticky != 0:
		return "a sticky directory"
	}
	return ""
}
