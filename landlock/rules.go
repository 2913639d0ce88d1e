package landlock

import (
	"path/filepath"
	"slices"
	"strings"

	"sandbox-executable/fsdeps"
)

// DirRulesWithin returns the rules of s for directories at or beneath one of
// dirs, each limited to the rights the ruleset handles: the rules a
// directory mounted over after the ruleset was built (a private /proc or
// /dev) needs again on the new mount, whose root is another inode. One of
// dirs that is an entry of a split directory gets the split's access; a
// split at or beneath one of dirs gets nothing on the new mount, which is
// the safe side (no default policy denies a path there).
func (s *Spec) DirRulesWithin(dirs []string) []Rule {
	var out []Rule
	add := func(p string, access AccessFS) {
		if st, err := fsdeps.Stat(p); err == nil && st.IsDir() && access&s.HandledFS != 0 {
			out = append(out, Rule{Path: p, Access: access & s.HandledFS})
		}
	}
	for _, r := range s.Rules {
		for _, d := range dirs {
			if r.Entries && r.Path == filepath.Dir(d) && !slices.Contains(r.Except, filepath.Base(d)) {
				add(d, r.Access) // one split may hold several of dirs
			}
			if !r.Entries && (r.Path == d || strings.HasPrefix(r.Path, d+"/")) {
				add(r.Path, r.Access)
				break
			}
		}
	}
	return out
}

// FileRights are the only rights a rule on a non-directory keeps, and
// PortRuleAccess the access of a port rule: for the spawn stage's runner,
// which builds the ruleset (runner.c).
const (
	FileRights     = fileRights
	PortRuleAccess = netConnectTCP
)
