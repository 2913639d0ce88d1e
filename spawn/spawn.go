// Package spawn carries out runs. Go decides a run and lays it out as a
// recipe (Recipe, Encode); the runner (runner.c) carries every run out from
// its recipe (RunRecipe, or the warm path before the Go runtime starts); its
// child stage (stage.c) applies, in the child between clone and execve,
// what the recipe lists (cgroup placement, namespace and mount operations,
// rlimits, the parent-death signal, fd closing, capabilities,
// no_new_privs, a Landlock ruleset, a seccomp filter, the signal state) and
// execs, like execvp, the first candidate path that works.
//
// The stage only applies what it is given, with raw system calls, on its
// own stack, while it shares the runner's memory (clone3 with
// CLONE_VM|CLONE_CLEAR_SIGHAND, born into its cgroup with
// CLONE_INTO_CGROUP). The one child Go starts through it directly is a
// trial's (Trial): namespaces and a few operations, no program.
package spawn

/*
// Every C file of the package, and cgo's own, is built with these (go vet
// and staticcheck never see C): a warning fails the build.
#cgo CFLAGS: -Wall -Wextra -Wconversion -Werror
#include <stdlib.h>
#include <string.h>
#include "stage.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Step names a step of the child stage.
type Step int

// The child's steps, in order.
const (
	StepNone         Step = C.SE_STEP_NONE
	StepClone        Step = C.SE_STEP_CLONE
	StepCgroup       Step = C.SE_STEP_CGROUP
	StepUnshare      Step = C.SE_STEP_UNSHARE
	StepOp           Step = C.SE_STEP_OP
	StepRlimit       Step = C.SE_STEP_RLIMIT
	StepPdeathsig    Step = C.SE_STEP_PDEATHSIG
	StepFDs          Step = C.SE_STEP_FDS
	StepCapabilities Step = C.SE_STEP_CAPS
	StepNoNewPrivs   Step = C.SE_STEP_NNP
	StepLandlock     Step = C.SE_STEP_LANDLOCK
	StepSeccomp      Step = C.SE_STEP_SECCOMP
	StepSignals      Step = C.SE_STEP_SIGNALS
	StepExec         Step = C.SE_STEP_EXEC
	StepInit         Step = C.SE_STEP_INIT
)

var stepNames = map[Step]string{StepNone: "", StepClone: "clone", StepCgroup: "cgroup", StepUnshare: "unshare", StepOp: "setup",
	StepRlimit: "rlimit", StepPdeathsig: "pdeathsig", StepFDs: "fds", StepCapabilities: "capabilities", StepNoNewPrivs: "no_new_privs",
	StepLandlock: "landlock", StepSeccomp: "seccomp", StepSignals: "signals", StepExec: "exec", StepInit: "init"}

func (s Step) String() string {
	if n, ok := stepNames[s]; ok {
		return n
	}
	return fmt.Sprintf("step %d", int(s))
}

// OpKind is the kind of an Op: the C stage's operation code (what each does
// is said by the constructor that makes it, in ops.go).
type OpKind int

// Operation kinds, as the C stage numbers them.
const (
	OpMount        OpKind = C.SE_OP_MOUNT         // MakePrivate, MountNew, Bind, RemountBind
	OpWrite        OpKind = C.SE_OP_WRITE         // WriteFile
	OpChdir        OpKind = C.SE_OP_CHDIR         // Chdir
	OpSetAttr      OpKind = C.SE_OP_SETATTR       // SetReadOnly
	OpOpenTree     OpKind = C.SE_OP_OPEN_TREE     // CloneTree
	OpMoveMount    OpKind = C.SE_OP_MOVE_MOUNT    // AttachTree
	OpLoUp         OpKind = C.SE_OP_LO_UP         // LoopbackUp
	OpListenSend   OpKind = C.SE_OP_LISTEN_SEND   // ListenAndHandOver
	OpMkdir        OpKind = C.SE_OP_MKDIR         // Mkdir
	OpCreate       OpKind = C.SE_OP_CREATE        // CreateFile
	OpSymlink      OpKind = C.SE_OP_SYMLINK       // Symlink
	OpLandlockRule OpKind = C.SE_OP_LANDLOCK_RULE // LandlockRule
	OpOpenSend     OpKind = C.SE_OP_OPEN_SEND     // OpenAndHandOver
)

// MaxSlots is the number of mount trees Ops can hold at once.
const MaxSlots = C.SE_MAX_SLOTS

// Rlimit is one resource limit to set in the child.
type Rlimit struct {
	Resource int
	Cur, Max uint64
}

// Error is a failure of the child before its program ran (a trial's, or a
// run's as Return.Error says it).
type Error struct {
	Step  Step
	Errno syscall.Errno
	// Detail names what the step was working on (a path, an op's why).
	Detail string
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s: %s: %s", e.Step, e.Detail, e.Errno)
	}
	return fmt.Sprintf("%s: %s", e.Step, e.Errno)
}

// exitRule says which exit code the child ends with when Step fails with
// Errno (StepNone and 0 match any): the C stage's struct se_exit_rule.
type exitRule struct {
	Step  Step
	Errno syscall.Errno
	Code  int
}

// exitRules are the exit codes of failed steps, first match first: every
// recipe carries them (Encode), and the stage and the runner end a run
// whose child failed with them (se_exit_code_of): 127 when the program was
// not found, 126 when it was found but could not be executed, 125 for every
// failure before that.
var exitRules = []exitRule{
	{StepExec, unix.ENOENT, 127},
	{StepExec, unix.ENOTDIR, 127},
	{StepExec, 0, 126},
	{StepNone, 0, 125},
}

// InitialState reports the process's signal mask, its ignored signals and
// RLIMIT_NOFILE as they were before the Go runtime started. The runner
// gives the program the same mask and ignored signals; the decision
// chooses RLIMIT_NOFILE.
func InitialState() (mask unix.Sigset_t, ignored []syscall.Signal, nofile Rlimit) {
	var cmask C.sigset_t
	var cign [64]C.int
	var n C.int
	var cur, max C.uint64_t
	C.se_initial_state(&cmask, &cign[0], 64, &n, &cur, &max)
	mask = *(*unix.Sigset_t)(unsafe.Pointer(&cmask))
	for i := 0; i < int(n); i++ {
		ignored = append(ignored, syscall.Signal(cign[i]))
	}
	return mask, ignored, Rlimit{Resource: unix.RLIMIT_NOFILE, Cur: uint64(cur), Max: uint64(max)}
}

// Trial is a child that makes namespaces and carries out a few operations
// in them, then exits: what the kernel allows is learned by doing it
// (mountns.Try). No program runs. Its child goes through the stage a run's
// child goes through, in the same order (the clone with its namespaces,
// the unshare, the operations), and stops there.
type Trial struct {
	// NamespaceFlags are the CLONE_NEW* flags of the clone.
	NamespaceFlags uintptr
	// UnshareFlags are unshare(2) flags applied once cloned
	// (CLONE_NEWCGROUP, made as a run's program makes it).
	UnshareFlags uintptr
	// Ops run in order after the unshare. None may hand a descriptor
	// over: a trial has nobody to receive it.
	Ops []Op
}

// Process is a trial's child, which the caller must reap.
type Process struct {
	Pid int
	// PidFD is a pidfd for the child (close-on-exec), or -1 where the
	// legacy clone made it. The caller owns it.
	PidFD int
}

// childStackSize is the child's stack: the stage uses a few hundred bytes.
const childStackSize = 64 << 10

// Start clones the trial's child. It returns once the child has carried
// out every step (nil error) or failed one (an *Error): the child has left
// this process's memory either way, and must still be reaped. A nil
// Process means no child was made.
func (t *Trial) Start() (*Process, error) {
	for _, op := range t.Ops {
		if op.kind == OpListenSend || op.kind == OpOpenSend {
			return nil, fmt.Errorf("spawn: trial: %s: a trial has nobody to hand a descriptor to", op.why)
		}
	}
	a := &arena{}
	defer a.free()
	r := (*C.struct_se_req)(a.alloc(C.sizeof_struct_se_req))
	r.trial = 1
	// None of these (0 would be stdin).
	r.cgroup_fd, r.procs_fd, r.ruleset_fd, r.notify_sock, r.audit_sock, r.fg_tty = -1, -1, -1, -1, -1, -1
	// Born into no cgroup, the child may come from the legacy clone
	// where clone3 is refused, as a run's would.
	r.clone_fallback = 1
	r.ns_flags = C.ulong(t.NamespaceFlags)
	r.unshare_flags = C.ulong(t.UnshareFlags)
	fillOps(a, r, t.Ops)
	r.stack = a.alloc(childStackSize)
	r.stack_size = childStackSize

	pid := C.se_spawn(r)
	if pid < 0 {
		return nil, &Error{Step: StepClone, Errno: syscall.Errno(-pid)}
	}
	p := &Process{Pid: int(pid), PidFD: int(r.pidfd)}
	if r.used_clone3 == 0 {
		p.PidFD = -1
	}
	if step := Step(r.fail_step); step != StepNone {
		// A trial's child is a run's without its program: its
		// failures are named as a run's are.
		detail := (&Recipe{Ops: t.Ops}).detail(step, int(r.fail_index), "")
		return p, &Error{Step: step, Errno: syscall.Errno(r.fail_errno), Detail: detail}
	}
	return p, nil
}

// fillOps copies a trial's operations into r.
func fillOps(a *arena, r *C.struct_se_req, list []Op) {
	if len(list) == 0 {
		return
	}
	ops := unsafe.Slice((*C.struct_se_op)(a.alloc(C.sizeof_struct_se_op*C.size_t(len(list)))), len(list))
	for i, op := range list {
		ops[i].kind = C.int(op.kind)
		ops[i].fd = C.int(op.slot)
		ops[i].flags = C.ulong(op.num)
		ops[i].a = a.cstring(op.a)
		ops[i].b = a.cstring(op.b)
		ops[i].c = a.cstring(op.c)
		ops[i].d = a.cstring(op.d)
		ops[i].ida, ops[i].idb = op.ida.c(), op.idb.c()
		if op.lowerIsTarget {
			ops[i].lower_is_target = 1
		}
	}
	r.ops = &ops[0]
	r.nops = C.int(len(list))
}

// capSteps name the parts of dropping capabilities, in order.
var capSteps = []string{"securebits", "ambient set", "bounding set", "capset"}

func rlimitName(r int) string {
	switch r {
	case unix.RLIMIT_CPU:
		return "RLIMIT_CPU"
	case unix.RLIMIT_FSIZE:
		return "RLIMIT_FSIZE"
	case unix.RLIMIT_NOFILE:
		return "RLIMIT_NOFILE"
	case unix.RLIMIT_CORE:
		return "RLIMIT_CORE"
	case unix.RLIMIT_AS:
		return "RLIMIT_AS"
	case unix.RLIMIT_DATA:
		return "RLIMIT_DATA"
	case unix.RLIMIT_NPROC:
		return "RLIMIT_NPROC"
	}
	return fmt.Sprintf("resource %d", r)
}

// arena holds the C allocations of one call (a trial's Start, RunRecipe's
// argv); everything is freed together once the child has left this
// process's memory.
type arena struct{ ptrs []unsafe.Pointer }

func (a *arena) alloc(n C.size_t) unsafe.Pointer {
	p := C.calloc(1, n)
	if p == nil {
		panic("spawn: out of memory")
	}
	a.ptrs = append(a.ptrs, p)
	return p
}

func (a *arena) cstring(s string) *C.char {
	if s == "" {
		return nil
	}
	p := a.alloc(C.size_t(len(s) + 1))
	copy(unsafe.Slice((*byte)(p), len(s)), s)
	return (*C.char)(p)
}

// strings returns a NULL-terminated char* array.
func (a *arena) strings(ss []string) **C.char {
	arr := unsafe.Slice((**C.char)(a.alloc(C.size_t(len(ss)+1)*C.size_t(unsafe.Sizeof((*C.char)(nil))))), len(ss)+1)
	for i, s := range ss {
		p := a.alloc(C.size_t(len(s) + 1))
		copy(unsafe.Slice((*byte)(p), len(s)), s)
		arr[i] = (*C.char)(p)
	}
	return &arr[0]
}

func (a *arena) free() {
	for _, p := range a.ptrs {
		C.free(p)
	}
	a.ptrs = nil
}
