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

// RemoveRecorded removes, under the group's exclusive lock (the caller's),
// every placeholder recorded in group that lies in parent and still
// matches its record, through parent's descriptor: the runner's own
// release does the same when a run ends (runner.c se_remove_recorded).
func RemoveRecorded(group, parent string) {
	g, p := C.CString(group), C.CString(parent)
	defer C.free(unsafe.Pointer(g))
	defer C.free(unsafe.Pointer(p))
	C.se_remove_recorded(g, p)
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
