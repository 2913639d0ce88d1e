package spawn

/*
#include <stdlib.h>
#include "recipekey.h"
#include "stage.h"
*/
import "C"

import (
	"os"
	"unsafe"
)

// RecipeKey returns the recipe key the process computed as it started,
// before the Go runtime (see recipekey.h for what it covers and how), and
// the index in os.Args of the program's argv[0]: the element after the
// first "--". ok is false when the process has no key (no "--", nothing
// after it, or an input that could not be read); the warm path then never
// applies.
//
// The first "--" may be an option's value rather than the end of the
// helper's options: a recipe may be stored under the key only when the
// helper's own parse put the program at progIndex (see RecipeKeyFor).
func RecipeKey() (key [32]byte, progIndex int, ok bool) {
	var idx C.int
	if C.se_recipe_key((*C.uchar)(&key[0]), &idx) != 1 {
		return [32]byte{}, 0, false
	}
	return key, int(idx), true
}

// RecipeKeyFor returns the process's recipe key when it names the
// invocation whose program argv is argv, as the helper's own parser found
// it: ok only when the process has a key and argv is exactly
// os.Args[progIndex:]. That the first "--" ends the helper's options
// depends on the arguments before it alone, which the key covers, so
// every run with this key agrees with the parse the same way.
func RecipeKeyFor(argv []string) (key [32]byte, ok bool) {
	key, idx, ok := RecipeKey()
	if !ok || idx > len(os.Args) || len(argv) != len(os.Args)-idx {
		return [32]byte{}, false
	}
	for i, a := range argv {
		if os.Args[idx+i] != a {
			return [32]byte{}, false
		}
	}
	return key, true
}

// RecipeKeyOf computes the key of an invocation with the helper argv args
// (args[0] the helper's name) and the environment env, in this process's
// state otherwise (se_recipe_key_of): what the resident decider stores a
// run's entry under, once it has taken on the run's working directory,
// standard descriptors and RLIMIT_NOFILE (SetInitialNofile). progIndex is
// the index in args of the program's argv[0]. Not safe for concurrent use.
func RecipeKeyOf(args, env []string) (key [32]byte, progIndex int, ok bool) {
	cargs, free1 := cStrings(args)
	defer free1()
	cenv, free2 := cStrings(env)
	defer free2()
	var idx C.int
	if C.se_recipe_key_of(C.int(len(args)), cargs, cenv, (*C.uchar)(&key[0]), &idx) != 1 {
		return [32]byte{}, 0, false
	}
	return key, int(idx), true
}

// SetInitialNofile makes n the RLIMIT_NOFILE this process started with, as
// InitialState reports it (se_set_initial_nofile): the resident decider
// takes on the one of the run it decides for.
func SetInitialNofile(n Rlimit) {
	C.se_set_initial_nofile(C.uint64_t(n.Cur), C.uint64_t(n.Max))
}

// cStrings is a NULL-ended C array of copies of ss, and its release.
func cStrings(ss []string) (**C.char, func()) {
	arr := (**C.char)(C.calloc(C.size_t(len(ss)+1), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	elems := unsafe.Slice(arr, len(ss)+1)
	for i, s := range ss {
		elems[i] = C.CString(s)
	}
	return arr, func() {
		for _, p := range elems[:len(ss)] {
			C.free(unsafe.Pointer(p))
		}
		C.free(unsafe.Pointer(arr))
	}
}

// StatusDigest is a digest of the lines of a /proc status file that the
// recipe key covers (se_status_digest): equal for two processes whose
// credentials, capabilities, no_new_privs and seccomp filters the key
// cannot tell apart.
func StatusDigest(status []byte) (d [32]byte) {
	var p *C.char
	if len(status) > 0 {
		p = (*C.char)(unsafe.Pointer(&status[0]))
	}
	C.se_status_digest(p, C.size_t(len(status)), (*C.uchar)(&d[0]))
	return d
}
