package spawn

/*
#include <stdlib.h>
#include "recipe.h"
*/
import "C"

import "unsafe"

// ExecPaths lists the paths the runner's child tries for the program name,
// in order, given the PATH entries dirs (Recipe.PathDirs): the runner's own
// search (se_exec_paths), so that what a report names is what was tried.
func ExecPaths(dirs []string, name string) []string {
	if name == "" {
		return nil
	}
	cdirs := make([]*C.char, len(dirs)+1)
	for i, d := range dirs {
		cdirs[i] = C.CString(d)
	}
	defer func() {
		for _, p := range cdirs {
			C.free(unsafe.Pointer(p))
		}
	}()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	list := C.se_exec_paths((**C.char)(unsafe.Pointer(&cdirs[0])), C.size_t(len(dirs)), cname)
	if list == nil {
		panic("spawn: out of memory")
	}
	defer C.free(unsafe.Pointer(list))
	var out []string
	for _, p := range unsafe.Slice(list, len(dirs)+1) {
		if p == nil {
			break
		}
		out = append(out, C.GoString(p))
		C.free(unsafe.Pointer(p))
	}
	return out
}
