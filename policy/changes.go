package policy

import (
	"path/filepath"
	"slices"
	"strings"
)

// Changes are a person's changes to a policy: the command line's composing
// flags and a project file's settings (package standalone reads both).
// Each carries where it came from (From: "--rw", ".sandbox.json: rw[0]"),
// which errors and --explain name. Resolve applies them on top of the
// policy: Writable paths are writable roots after the policy's own;
// ReadOnly paths inside a root are write-denied, and Hidden paths denied
// for reading and writing. A Writable or ReadOnly path that names a secret
// the built-in default hides, that path itself, lifts that denial
// (LiftDefaults); a path around one leaves it denied (`--rw ~` keeps
// ~/.ssh unreadable: a secret is given up only by its name). A given
// policy's denials are the caller's, and a change that would lift one is
// refused.
type Changes struct {
	Writable []ChangedPath
	ReadOnly []ChangedPath
	Hidden   []ChangedPath
	// Net, when set, replaces the network mode the policy gives.
	Net *NetChange
	// LiftDefaults: the denied paths are the built-in default's (no
	// policy was given), so a Writable or ReadOnly path may lift them.
	LiftDefaults bool
	// GitCommit, when set, says where --allow-git-commit was asked for:
	// the ".git" directory at the top of each writable root becomes
	// writable but for what git runs or loads (see gitDirEntries), so
	// that commits can be made in the sandbox.
	GitCommit string
}

// ChangedPath is a path a change names: absolute, or "~/..." (expanded
// like a sensitive path).
type ChangedPath struct {
	Path string
	From string
}

// NetChange is a network mode asked for by a change.
type NetChange struct {
	Mode NetworkMode
	// Allow are the hosts of the allowlist mode.
	Allow []HostPort
	From  string
}

// changeErr is an error in a change, naming where it came from.
func changeErr(from, msg string) *Error {
	return &Error{Arg: from, Msg: msg}
}

// changedPath expands and canonicalizes a changed path leniently (it need
// not exist), as sensitive paths are.
func (r *resolver) changedPath(c ChangedPath) (canonical, error) {
	if strings.IndexByte(c.Path, 0) >= 0 {
		return canonical{}, changeErr(c.From, quote(c.Path)+": contains a NUL byte")
	}
	expanded, err := expandTilde(c.Path, r.home)
	if err != nil {
		return canonical{}, changeErr(c.From, "cannot expand ~: "+err.Error())
	}
	if !filepath.IsAbs(expanded) {
		return canonical{}, changeErr(c.From, quote(c.Path)+": not an absolute path")
	}
	cp, err := r.memo.resolveLenient(expanded)
	if err != nil {
		return canonical{}, changeErr(c.From, plain(expanded)+": "+errnoText(err))
	}
	return cp, nil
}

// liftDenials removes from read (and, for a writable change, from write)
// the sensitive paths a Writable or ReadOnly change names.
// A change strictly beneath a denied path cannot lift part of it (a mask
// covers the whole directory), and a given policy's denials are never
// lifted: both are refused.
func (r *resolver) liftDenials(read, write *deniedList) error {
	ch := r.in.Changes
	if ch == nil {
		return nil
	}
	type lift struct {
		path, from string
		write      bool
	}
	var lifts []lift
	for _, set := range []struct {
		list  []ChangedPath
		write bool
	}{{ch.Writable, true}, {ch.ReadOnly, false}} {
		for _, c := range set.list {
			cp, err := r.changedPath(c)
			if err != nil {
				return err
			}
			lifts = append(lifts, lift{path: cp.Path, from: c.From, write: set.write})
		}
	}
	if len(lifts) == 0 {
		return nil
	}
	for _, l := range lifts {
		denied := read.list
		if l.write {
			denied = slices.Concat(read.list, write.list)
		}
		for _, d := range denied {
			if !isSensitiveSource(d.Source) {
				continue
			}
			switch {
			case d.Path == l.path:
				if !ch.LiftDefaults {
					return changeErr(l.from, plain(l.path)+": the policy denies "+plain(d.Path)+" ("+d.Source+"); a change cannot lift a given policy's denial: edit the policy")
				}
			case Beneath(l.path, d.Path):
				return changeErr(l.from, plain(l.path)+": beneath "+plain(d.Path)+", which is denied ("+d.Source+") as a whole; name "+plain(d.Path)+" itself to lift its denial")
			}
		}
	}
	keep := func(list []DeniedPath, writeSide bool) []DeniedPath {
		out := list[:0:0]
		for _, d := range list {
			lifted := false
			for _, l := range lifts {
				if isSensitiveSource(d.Source) && d.Path == l.path && (!writeSide || l.write) {
					lifted = true
					side := "reading"
					if writeSide {
						side = "writing"
					}
					r.note(plain(d.Path) + " (" + d.Source + ") is no longer denied for " + side + ": " + l.from + " " + plain(l.path) + ".")
					break
				}
			}
			if !lifted {
				out = append(out, d)
			}
		}
		return out
	}
	read.list = keep(read.list, false)
	write.list = keep(write.list, true)
	read.reindex()
	write.reindex()
	return nil
}

// isSensitiveSource reports whether a denied path's Source is a sensitive
// path's (the policy's list or the defaults), the only ones a change may
// lift; protected metadata and the helper's own state never are.
func isSensitiveSource(src string) bool {
	return strings.HasPrefix(src, "default_sensitive_paths") || strings.HasPrefix(src, "sensitive_paths[")
}

// reindex rebuilds the de-duplication index after entries were removed.
func (d *deniedList) reindex() {
	d.seen = make(map[string]bool, len(d.list))
	for _, p := range d.list {
		d.seen[p.Path] = true
	}
}

// changedDenials adds the Hidden paths (read and write denied) and the
// ReadOnly paths that lie in a writable root (write denied; elsewhere a
// path is read-only already, and a note says so).
func (r *resolver) changedDenials(roots []WritablePath, read, write *deniedList) error {
	ch := r.in.Changes
	if ch == nil {
		return nil
	}
	for _, c := range ch.Hidden {
		cp, err := r.changedPath(c)
		if err != nil {
			return err
		}
		for _, root := range roots {
			if Within(root.Path, cp.Path) {
				return changeErr(c.From, plain(cp.Path)+": holds the writable root "+plain(root.Path)+"; a hidden path must lie outside the roots or inside one")
			}
		}
		read.addResolved(cp, c.Path, c.From, false)
		write.addResolved(cp, c.Path, c.From, true)
	}
	for _, c := range ch.ReadOnly {
		cp, err := r.changedPath(c)
		if err != nil {
			return err
		}
		inRoot := false
		for _, root := range roots {
			if cp.Path == root.Path {
				return changeErr(c.From, plain(cp.Path)+": is a writable root itself ("+root.Source+"); for a run that writes nothing, give --sandbox-policy '{\"type\":\"read_only\"}'")
			}
			if Within(cp.Path, root.Path) {
				inRoot = true
			}
			if Beneath(root.Path, cp.Path) {
				return changeErr(c.From, plain(cp.Path)+": holds the writable root "+plain(root.Path)+"; make the root itself read-only by not granting it")
			}
		}
		if !inRoot {
			r.note(c.From + " " + plain(cp.Path) + ": outside every writable root, so read-only already.")
			continue
		}
		write.addResolved(cp, c.Path, c.From, true)
	}
	return nil
}
