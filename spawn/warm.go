package spawn

/*
#include <stdlib.h>
#include "recipe.h"
*/
import "C"

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StoredRecipe is the body of a stored recipe as the warm path reads it
// (recipestore.h's se_stored_split): the decision's filesystem dependencies
// (fsdeps' encoding), the recipe, and the service record Go serves the run
// from should the runner call on it, each 8-aligned.
func StoredRecipe(deps, recipe, record []byte) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(len(deps)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(recipe)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(record)))
	b = binary.LittleEndian.AppendUint32(b, 0)
	for _, part := range [][]byte{deps, recipe, record} {
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		b = append(b, part...)
	}
	return b
}

// PlaceholderGroupDir is the registry directory of the placeholders made
// in parent (the runner's se_group_dir).
func PlaceholderGroupDir(registry, parent string) string {
	r, p := C.CString(registry), C.CString(parent)
	defer C.free(unsafe.Pointer(r))
	defer C.free(unsafe.Pointer(p))
	d := C.se_group_dir(r, p)
	if d == nil {
		panic("spawn: out of memory")
	}
	defer C.free(unsafe.Pointer(d))
	return C.GoString(d)
}

// SweepPlaceholders removes the placeholders that no run claims from the
// registry (the runner's se_sweep_placeholders): left by runs whose
// supervisor and guardian both died, in a directory no run has used
// since. A group in use is left alone (its last run removes them).
func SweepPlaceholders(registry string) {
	r := C.CString(registry)
	defer C.free(unsafe.Pointer(r))
	C.se_sweep_placeholders(r)
}

// HoldPlaceholderDecisions keeps runs from making or removing placeholders
// in the group until release is called (the runner's se_hold_decisions):
// it waits, for a bounded time, for those doing so, and meanwhile every
// placeholder a run has made is recorded and stays as it is. Past the
// bound, or in a group no run has decided in, it holds nothing.
func HoldPlaceholderDecisions(group string) (release func()) {
	g := C.CString(group)
	defer C.free(unsafe.Pointer(g))
	fd := int(C.se_hold_decisions(g))
	return func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// PlaceholderRecordPath is where the registry group directory records the
// placeholder path (the runner's se_record_path).
func PlaceholderRecordPath(group, path string) string {
	g, p := C.CString(group), C.CString(path)
	defer C.free(unsafe.Pointer(g))
	defer C.free(unsafe.Pointer(p))
	r := C.se_record_path(g, p)
	if r == nil {
		panic("spawn: out of memory")
	}
	defer C.free(unsafe.Pointer(r))
	return C.GoString(r)
}

// PlaceholderRecord is what a placeholder's record says of the directory
// a run made: its identity and ctime.
type PlaceholderRecord struct {
	Dev, Ino uint64
	Ctime    unix.Timespec
}

// ParsePlaceholderRecord reads a record's text as the runner wrote it.
func ParsePlaceholderRecord(text string) (PlaceholderRecord, bool) {
	t := C.CString(text)
	defer C.free(unsafe.Pointer(t))
	var dev, ino C.uint64_t
	var sec, nsec C.int64_t
	if C.se_record_parse(t, &dev, &ino, &sec, &nsec) != 1 {
		return PlaceholderRecord{}, false
	}
	return PlaceholderRecord{Dev: uint64(dev), Ino: uint64(ino), Ctime: unix.Timespec{Sec: int64(sec), Nsec: int64(nsec)}}, true
}
