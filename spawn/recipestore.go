package spawn

/*
#include <stdlib.h>
#include "recipestore.h"
*/
import "C"

import "unsafe"

// The C recipe lookup, for the tests, which cannot use cgo themselves; the
// warm path calls se_recipe_lookup from C.

// lookupRecipeC is se_recipe_lookup: the body stored under key, or false.
func lookupRecipeC(key [32]byte) ([]byte, bool) {
	var body *C.uchar
	var n C.size_t
	if C.se_recipe_lookup((*C.uchar)(&key[0]), &body, &n) != 1 {
		return nil, false
	}
	defer C.free(unsafe.Pointer(body))
	return C.GoBytes(unsafe.Pointer(body), C.int(n)), true
}

// setRecipeBaseC points the C lookup at dir as the state directory ("":
// the normal one), as runstate.Base does for Go.
func setRecipeBaseC(dir string) {
	if dir == "" {
		C.se_recipe_set_base(nil)
		return
	}
	c := C.CString(dir)
	defer C.free(unsafe.Pointer(c))
	C.se_recipe_set_base(c)
}
