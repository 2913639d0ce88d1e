package landlock

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// WriterRights are the rights RestrictThread grants beneath each of its
// directories: what a program may do to the files beneath a writable root,
// as far as this kernel's Landlock knows them.
func WriterRights(abi int) AccessFS { return writeRights & fsRightsAt(abi) }

// RestrictThread confines the calling thread (and it alone: the domain is
// taken without TSYNC) to changing files beneath dirs, O_PATH descriptors
// of directories: it handles WriterRights and grants them on each, so
// nothing outside them can be written, made, removed or renamed by the
// thread. Reading is not handled. The thread needs no_new_privs (or
// CAP_SYS_ADMIN). The supervisor's filesystem mediation acts from such a
// thread (package fsmed).
func RestrictThread(abi int, dirs []int) error {
	rights := WriterRights(abi)
	if abi < 1 || rights == 0 {
		return fmt.Errorf("landlock: no Landlock to confine the mediating thread with")
	}
	ruleset, err := createRuleset(rights, 0, 0)
	if err != nil {
		return fmt.Errorf("landlock: create the mediating thread's ruleset: %w", err)
	}
	defer unix.Close(ruleset)
	for _, fd := range dirs {
		if err := addPathRule(ruleset, fd, rights); err != nil {
			return fmt.Errorf("landlock: the mediating thread's rule: %w", err)
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
		return fmt.Errorf("landlock: restrict the mediating thread: %w", e)
	}
	return nil
}
