package spawn

/*
#include "statedir.h"
*/
import "C"

// StatePlaces are the places of a user's state directory, as the rule in
// statedir.h finds them: Dir is the state directory, Later where it would
// move should Dir go (every sandbox is denied them too), Parent the
// directory whose checks Dir needs ("" when choosing Dir implied them), and
// Passed why the /tmp place was passed over ("" when it was not). It is the
// one implementation of where the state lies: the warm path follows it
// before Go starts, and package runstate asks it here.
type StatePlaces struct {
	Dir    string
	Later  []string
	Parent string
	Passed string
}

// StateWhere finds the places of euid's state directory; Dir is "" when
// none can be had (Passed says why). Without all it stops at Dir (Later is
// empty), as a lookup needs: that costs a stat or two, and a read of
// /etc/passwd only when the /tmp place is someone else's.
func StateWhere(euid int, all bool) StatePlaces {
	var w C.struct_se_state_where
	a := C.int(0)
	if all {
		a = 1
	}
	n := int(C.se_state_where(C.uint(euid), a, &w))
	p := StatePlaces{Passed: C.GoString(&w.passed[0])}
	if n == 0 {
		return p
	}
	p.Dir, p.Parent = C.GoString(&w.place[0][0]), C.GoString(&w.parent[0])
	for i := 1; i < n; i++ {
		p.Later = append(p.Later, C.GoString(&w.place[i][0]))
	}
	return p
}
