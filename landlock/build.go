package landlock

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
)

// Build creates the kernel ruleset for s and returns its fd (close-on-exec;
// the caller owns it and passes it to the spawn stage with RestrictFlags),
// or -1 when the kernel has no Landlock.
func (s *Spec) Build() (int, error) {
	if s.ABI < 1 {
		return -1, nil
	}
	fd, err := createRuleset(s.HandledFS, s.HandledNet, s.Scoped)
	if err != nil {
		return -1, fmt.Errorf("landlock: create ruleset: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	for _, r := range s.Rules {
		// A rule may only grant what the ruleset handles: a right this
		// kernel does not know would make the rule invalid.
		r.Access &= s.HandledFS
		if err := addPath(fd, r); err != nil {
			return -1, err
		}
	}
	for _, port := range s.Ports {
		if err := addPortRule(fd, netConnectTCP, port); err != nil {
			return -1, fmt.Errorf("landlock: allow connect to port %d: %w", port, err)
		}
	}
	ok = true
	return fd, nil
}

func addPath(ruleset int, r Rule) error {
	fd, err := openNoSymlinks(r.Path)
	if err != nil {
		if !r.Required && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)) {
			return nil // vanished or replaced since it was listed: not granting is the safe side
		}
		if errors.Is(err, unix.ELOOP) {
			return fmt.Errorf("landlock: %s: a symbolic link appeared on the way after it was resolved; refusing to grant what it points to", r.Path)
		}
		return fmt.Errorf("landlock: %s: %w", r.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: %s: %w", r.Path, err)
	}
	access := r.Access
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFLNK:
		if r.Required {
			return fmt.Errorf("landlock: %s: became a symbolic link after it was resolved", r.Path)
		}
		return nil
	default:
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	if err := addPathRule(ruleset, fd, access); err != nil {
		return fmt.Errorf("landlock: %s: add rule %s: %w", r.Path, access, err)
	}
	return nil
}

// openNoSymlinks opens the canonical path p with O_PATH, following no
// symlink anywhere on the way (openat2 RESOLVE_NO_SYMLINKS; a symlink as
// the last component is opened itself). The paths of a Plan have none: one
// met here was made since the Plan was (by a sandboxed program racing this
// start, for example), and following it would grant its target instead.
// Kernels before 5.6 have no openat2: there only the last component is not
// followed.
func openNoSymlinks(p string) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &how)
	if errors.Is(err, unix.ENOSYS) {
		return unix.Open(p, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	return fd, err
}

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

// FileRights are the only rights a rule on a non-directory keeps (Build
// drops the others), and PortRuleAccess the access of a port rule: for a
// builder that is not Build (the spawn stage's runner), which must add the
// same rules.
const (
	FileRights     = fileRights
	PortRuleAccess = netConnectTCP
)
