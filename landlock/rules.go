package landlock

import (
	"sandbox-executable/fsdeps"
	"strings"
)

// DirRulesWithin returns the rules of s for directories at or beneath one of
// dirs, each limited to the rights the ruleset handles: the rules a
// directory mounted over after the ruleset was built (a private /proc or
// /dev) needs again on the new mount, whose root is another inode.
func (s *Spec) DirRulesWithin(dirs []string) []Rule {
	var out []Rule
	for _, r := range s.Rules {
		for _, d := range dirs {
			if r.Path == d || strings.HasPrefix(r.Path, d+"/") {
				if st, err := fsdeps.Stat(r.Path); err == nil && st.IsDir() && r.Access&s.HandledFS != 0 {
					out = append(out, Rule{Path: r.Path, Access: r.Access & s.HandledFS})
				}
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
