package spawn

/*
#include <stddef.h>
#include "recipe.h"

int se_warm(struct se_handover **h, void **recipe, size_t *len);
*/
import "C"

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WarmState says what the warm path did before the Go runtime started.
type WarmState int

// What the warm path did.
const (
	// WarmNone: no stored recipe applied (none for this invocation, or
	// one whose dependencies no longer hold).
	WarmNone WarmState = iota
	// WarmFellBack: a stored recipe applied, and the runner started
	// nothing (Go runs the run).
	WarmFellBack
	// WarmHandedOver: the runner started the program and handed the run
	// over (Warm's Handover).
	WarmHandedOver
)

// Warm reports what the warm path did, and for WarmHandedOver the run and
// the recipe (Encode's bytes) it was started from. The run must be adopted
// (supervisor.Adopt) from the decision that made that recipe, or ended
// (Abandon).
func Warm() (WarmState, *Handover, []byte) {
	var h *C.struct_se_handover
	var recipe unsafe.Pointer
	var n C.size_t
	st := WarmState(C.se_warm(&h, &recipe, &n))
	if st != WarmHandedOver {
		return st, nil, nil
	}
	return st, handoverOf(h), C.GoBytes(recipe, C.int(n))
}

// Abandon ends a run the runner handed over that Go will not supervise (its decision refused it, or differs): SIGKILL to the child,
// whose end ends its namespace; the guardian, never released, removes the
// rest once this process exits.
func (h *Handover) Abandon() {
	if h.Proc == nil {
		return
	}
	if h.Proc.PidFD >= 0 {
		_ = unix.PidfdSendSignal(h.Proc.PidFD, unix.SIGKILL, nil, 0)
	} else {
		_ = unix.Kill(h.Proc.Pid, unix.SIGKILL)
	}
}

// StoredDeps returns the dependencies (fsdeps' encoding) of the body of a
// stored recipe (StoredRecipe's), or false when the body is too short for
// what its head says.
func StoredDeps(body []byte) ([]byte, bool) {
	if len(body) < 8 {
		return nil, false
	}
	n := uint64(binary.LittleEndian.Uint32(body))
	if n > uint64(len(body)-8) {
		return nil, false
	}
	return body[8 : 8+n], true
}

// StoredRecipe is the body of a stored recipe: the decision's filesystem
// dependencies (fsdeps' encoding) and the recipe, as the warm path reads
// them.
func StoredRecipe(deps, recipe []byte) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(len(deps)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(recipe)))
	b = append(b, deps...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return append(b, recipe...)
}
