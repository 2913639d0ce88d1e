package spawn

/*
#include "recipekey.h"
*/
import "C"

import "os"

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
