package spawn

/*
#include "deps.h"
*/
import "C"

import "unsafe"

// DepsReason says why CheckDeps failed.
type DepsReason int

// The reasons (se_deps_reason in deps.h).
const (
	DepsOK        DepsReason = C.SE_DEPS_OK
	DepsMalformed DepsReason = C.SE_DEPS_MALFORMED
	DepsErrno     DepsReason = C.SE_DEPS_ERRNO
	DepsChanged   DepsReason = C.SE_DEPS_CHANGED
	DepsIO        DepsReason = C.SE_DEPS_IO
)

// String says the reason in words.
func (r DepsReason) String() string {
	switch r {
	case DepsOK:
		return "ok"
	case DepsMalformed:
		return "malformed"
	case DepsErrno:
		return "errno differs"
	case DepsChanged:
		return "changed"
	case DepsIO:
		return "read failed"
	}
	return "unknown"
}

// CheckDeps runs the C verifier (se_deps_check_ex, the code the warm path
// runs before the Go runtime starts) on an encoding of fsdeps.Encode's: ok
// when every dependency still holds; otherwise the index of the first
// record that does not (-1 for the header or trailing bytes) and why.
func CheckDeps(b []byte) (ok bool, index int, why DepsReason) {
	var p *C.uchar
	if len(b) > 0 {
		p = (*C.uchar)(unsafe.Pointer(&b[0]))
	}
	var idx C.long
	var reason C.int
	r := C.se_deps_check_ex(p, C.size_t(len(b)), &idx, &reason)
	return r == 1, int(idx), DepsReason(reason)
}
