package spawn

// The runner's rules that Go asks too: one implementation, in C, for the
// decision and the run alike.

/*
#include <stdlib.h>
#include "recipe.h"
*/
import "C"

import (
	"syscall"
	"unsafe"
)

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

// FileFacts are what a judge of a file knows of it: the error of its stat,
// or its owner and mode (the kernel's st_mode bits).
type FileFacts struct {
	Err  syscall.Errno
	UID  uint32
	Mode uint32
}

// TmpVerdict is se_shared_tmp_judge's verdict on a shared temp mount point.
type TmpVerdict int

// The verdicts (enum se_tmp_verdict).
const (
	TmpFit          TmpVerdict = C.SE_TMP_FIT
	TmpParentUnread TmpVerdict = C.SE_TMP_PARENT_UNREAD
	TmpParentUnfit  TmpVerdict = C.SE_TMP_PARENT_UNFIT
	TmpUnread       TmpVerdict = C.SE_TMP_UNREAD
	TmpUnfit        TmpVerdict = C.SE_TMP_UNFIT
)

// JudgeSharedTmp judges the shared temp mount point from the facts of its
// parent (stat) and its own (lstat), as the runner judges it again at the
// run (recipe.h's se_shared_tmp_judge): a directory of uid's, mode 0700,
// in a parent no one else can rename it in; a missing one is fit when
// missing is set.
func JudgeSharedTmp(parent, self FileFacts, uid uint32, missing bool) TmpVerdict {
	p := C.struct_se_file_facts{err: C.int32_t(parent.Err), uid: C.uint32_t(parent.UID), mode: C.uint32_t(parent.Mode)}
	s := C.struct_se_file_facts{err: C.int32_t(self.Err), uid: C.uint32_t(self.UID), mode: C.uint32_t(self.Mode)}
	m := C.int(0)
	if missing {
		m = 1
	}
	return TmpVerdict(C.se_shared_tmp_judge(&p, &s, C.uint32_t(uid), m))
}

// CgroupStale reports whether name is a run's cgroup (the runner names
// them) whose supervisor is gone: the runner's own reading of its names
// (se_cgroup_stale), for the sweep of groups whose helper and guardian
// both died.
func CgroupStale(name string) bool {
	c := C.CString(name)
	defer C.free(unsafe.Pointer(c))
	return C.se_cgroup_stale(c) == 1
}
