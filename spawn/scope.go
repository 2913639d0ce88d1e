package spawn

/*
#include "scope.h"
*/
import "C"

// SupervisorScoped reports whether this process holds the supervisor's
// Landlock domain (scope.c): abstract unix sockets scoped, taken before any
// thread or child was started, so that every program it starts nests in it
// and every socket call it makes for one is checked by the kernel's
// scoping as the program's own would be.
func SupervisorScoped() bool { return C.se_supervisor_scoped() == 1 }

// The constants scope.c uses before Go runs, for the tests that check them
// against package landlock's table.
const (
	scopeMinABI       = C.SE_SCOPE_MIN_ABI
	scopeAbstractUnix = C.SE_SCOPE_ABSTRACT_UNIX
)
