package policy

import (
	"path/filepath"
	"strings"

	"sandbox-executable/fsdeps"
)

// protectSetting write-denies what one variable of gitKeys names where a
// program could write it, with the source "protected_metadata (KEY of the
// repository at TOP, set in FILE)": a program or script git runs (or its
// shell runs), a file git loads. Each path the value names
// (gitValueNamesOf) is taken from the directory git runs the value in
// (the key's Base, and each directory the value's shell text changes to)
// and protected by its rule (gitNameRule). A value whose paths cannot be
// known (a path built from an expansion, a pattern of files inside a
// writable root, a relative path where git's directory is not known) is
// refused, naming the key, unless the file that sets it is writable by
// the program anyway.
func (g *hookGuard) protectSetting(repo gitRepo, s foundSetting) error {
	names := gitValueNamesOf(s.key, s.value, g.valueContext())
	refuse := func(why string) error {
		if s.writable {
			return nil
		}
		return g.r.policyErr("", "protected metadata: git config "+plain(s.file)+": "+s.name+" = "+quote(s.value)+": "+why+
			"; git would run or read what it names, which a program could then write, so refusing")
	}
	if names.refuse != "" {
		if err := refuse(names.refuse); err != nil {
			return err
		}
	}
	bases, unknown := g.settingBases(repo, s.key, names)
	for _, n := range names.names {
		label := s.name
		if n.Via != "" {
			label += " (" + n.Via + ")"
		}
		source := "protected_metadata (" + label + " of the repository at " + plain(repo.top) + ", set in " + plain(s.file) + ")"
		paths := []string{n.Path}
		if !filepath.IsAbs(n.Path) {
			paths = nil
			for _, b := range bases {
				paths = append(paths, b+"/"+n.Path)
			}
			if unknown && n.Rule != nameIfFile && (n.Rule != namePathLike || explicitlyRelative(n.Path)) {
				if err := refuse(quote(n.Path) + " is taken from the directory git runs it in, which cannot be known here"); err != nil {
					return err
				}
			}
		}
		for _, p := range paths {
			if err := g.protectName(n, p, source, refuse); err != nil {
				return err
			}
		}
	}
	return nil
}

// protectName protects the path p that the name n stands for, by n's rule.
// No rule tells a missing path from an empty directory: a placeholder (an
// empty directory a run makes where a protected path is missing) must not
// change what a later decision protects, or a run deciding beside another
// one's placeholders, or deciding again while its own stand, would protect
// less (or other) than the decision that made them.
func (g *hookGuard) protectName(n gitName, p, source string, refuse func(string) error) error {
	c, links, err := g.r.memo.walkPath(p, true)
	if err != nil {
		return nil // a loop: git cannot reach it either
	}
	switch n.Rule {
	case nameProgram:
		if g.place(c.Path) {
			return nil
		}
	case namePathLike:
		if g.place(c.Path) {
			return nil
		}
		if !filepath.IsAbs(n.Path) && !explicitlyRelative(n.Path) && !g.firstExists(n, p) {
			return nil
		}
	case nameIfFile:
		if fi, err := g.r.memo.lstatPath(c.Path); !c.Exists || err != nil || fi.IsDir() {
			return nil
		}
	case nameUnknownIn:
		if !filepath.IsAbs(n.Path) && !explicitlyRelative(n.Path) && n.Path != "." && !g.firstExists(n, p) {
			return nil // "pull/$1/head": a refspec, not a directory
		}
		if g.inRoot(c.Path) && !g.covered(c.Path) {
			return refuse(quote(n.Path) + " is a directory inside a writable root in which it names files through an expansion or a pattern, which cannot be known here")
		}
	}
	return g.protect(c, links, n.Path, source)
}

// firstExists reports whether the first component of n's relative path
// (taken as p) exists, and is no empty directory (which a placeholder may
// be).
func (g *hookGuard) firstExists(n gitName, p string) bool {
	first, _, _ := strings.Cut(n.Path, "/")
	fc, _, err := g.r.memo.walkPath(strings.TrimSuffix(p, n.Path)+first, true)
	return err == nil && fc.Exists && !g.emptyDir(fc.Path)
}

// place reports whether the canonical path p is a directory with entries:
// a place the value names (cd's, find's), not a program or a file.
func (g *hookGuard) place(p string) bool {
	fi, err := g.r.memo.lstatPath(p)
	return err == nil && fi.IsDir() && !g.emptyDir(p)
}

// emptyDir reports whether the canonical path p is a directory without
// entries (as a placeholder is), or missing.
func (g *hookGuard) emptyDir(p string) bool {
	fi, err := g.r.memo.lstatPath(p)
	if err != nil {
		return true
	}
	if !fi.IsDir() {
		return false
	}
	entries, err := fsdeps.ReadDir(p)
	return err == nil && len(entries) == 0
}

// settingBases are the directories a relative path in the value of k is
// taken from: the key's base and the directories the value changes to;
// unknown says one of them cannot be known.
func (g *hookGuard) settingBases(repo gitRepo, k *gitKey, names gitValueNames) (bases []string, unknown bool) {
	switch k.Base {
	case baseTop:
		bases = []string{repo.top}
	case baseGitDir:
		if repo.gitDir != "" {
			bases = []string{repo.gitDir}
		} else {
			unknown = true
		}
	default:
		unknown = true
	}
	own := bases
	for _, cd := range names.cds {
		if filepath.IsAbs(cd) {
			bases = append(bases, cd)
			continue
		}
		if len(own) == 0 {
			unknown = true
		}
		for _, b := range own {
			bases = append(bases, b+"/"+cd)
		}
	}
	return bases, unknown || names.unknownCd
}

// explicitlyRelative reports whether p starts with "./" or "../".
func explicitlyRelative(p string) bool {
	return strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../")
}

// valueContext is what the analysis of a value needs of the resolver.
func (g *hookGuard) valueContext() gitValueContext {
	home, err := g.r.home()
	if err != nil {
		home = ""
	}
	return gitValueContext{home: home, expandPath: g.expand}
}
