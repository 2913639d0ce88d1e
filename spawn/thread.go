package spawn

/*
#include "recipe.h"
*/
import "C"

import (
	"fmt"
	"syscall"
)

// RestrictThread confines the calling OS thread, and it alone, with a
// Landlock domain that handles rights and grants them beneath each of
// dirs (O_PATH descriptors of directories): the runner's own ruleset code
// (se_landlock_restrict_thread), for the Go service's mediating thread.
// The thread needs no_new_privs (or CAP_SYS_ADMIN), and must stay locked
// to its goroutine for good.
func RestrictThread(rights uint64, dirs []int) error {
	cdirs := make([]C.int, len(dirs)+1)
	for i, fd := range dirs {
		cdirs[i] = C.int(fd)
	}
	if r := C.se_landlock_restrict_thread(C.uint64_t(rights), &cdirs[0], C.int(len(dirs))); r < 0 {
		return fmt.Errorf("landlock: confine the mediating thread: %w", syscall.Errno(-r))
	}
	return nil
}
