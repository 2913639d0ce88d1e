// Package spawn starts the sandboxed program: it clones a child that applies
// a fully prepared set of restrictions (cgroup placement, namespace and mount
// operations, rlimits, the parent-death signal, fd closing, no_new_privs,
// a Landlock ruleset, a seccomp filter, the signal state) and execs, like
// execvp, the first candidate path that works.
//
// Go decides everything; the child runs a small C stage that only applies
// what it is given, with raw system calls, on its own stack, while it shares
// the supervisor's memory (clone3 with CLONE_VM|CLONE_VFORK|
// CLONE_CLEAR_SIGHAND, born into its cgroup with CLONE_INTO_CGROUP). There is
// no second exec of the helper and no second Go runtime start. Because the
// creating thread waits until the child has execed or failed, a failure is
// known, with its step and errno, when Start returns.
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
	"runtime"
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

// Request is everything the child applies, already decided.
type Request struct {
	// Paths are the candidates execve is tried on, in order (execvp's PATH
	// search already expanded); Argv and Env are the program's.
	Paths []string
	Argv  []string
	Env   []string
	// ShellFallback runs "/bin/sh PATH ARGS..." when a candidate is not a
	// valid executable format (ENOEXEC), as execvp does.
	ShellFallback bool

	// CgroupFD is a v2 cgroup directory the child is born into, or -1.
	CgroupFD int
	// CgroupProcs is that cgroup's cgroup.procs file: where clone3 is
	// unavailable (an old kernel, or a container's seccomp filter answering
	// ENOSYS), Start opens it and the child joins through it instead. Empty:
	// no clone3, no run.
	CgroupProcs string
	// JoinFDs are cgroup.procs files the child writes "0" to first.
	JoinFDs []int
	// NamespaceFlags are CLONE_NEW* flags for the child. An init (Init) is
	// cloned into the user and PID namespaces of them and makes the others
	// itself (unshare) as its first step; a failure there is StepClone's.
	NamespaceFlags uintptr
	// UnshareFlags are unshare(2) flags applied right after the cgroup
	// joins (CLONE_NEWCGROUP: a cgroup namespace rooted at the run's
	// cgroup).
	UnshareFlags uintptr
	// Init, with CLONE_NEWPID in NamespaceFlags, makes the child the init
	// of the new PID namespace: it runs the setup steps, starts the
	// program as its own child (PID 2), forwards to it the signals sent to
	// the init from outside, reaps orphans, and exits when the program
	// does, which ends everything left in the namespace. Process.Status
	// then tells the program's own wait status. The program stays in the
	// caller's session and process group when one of its standard
	// descriptors is the caller's controlling terminal, and leads a session
	// of its own, with no controlling terminal, otherwise (se_own_session
	// in stage.c); the init leaves the caller's session.
	Init bool
	// DropCapabilities empties every capability set of the program and
	// its bounding set, and sets and locks the securebits that stop a
	// uid-0 program from regaining any (SECBIT_NOROOT,
	// SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS off,
	// SECBIT_NO_CAP_AMBIENT_RAISE).
	DropCapabilities bool
	// Ops run in order after the cgroup joins.
	Ops []Op
	// Trial makes the child exit with status 0 right after Ops (and the
	// cgroup joins and UnshareFlags before them): what the kernel allows
	// is learned by doing it, and no program runs (Paths may be empty;
	// Init must not be set). Start then returns nil error when every step
	// succeeded; the child must still be reaped.
	Trial bool

	Rlimits []Rlimit
	// Pdeathsig is sent to the child when the creating thread exits (the
	// init always gets SIGKILL).
	Pdeathsig syscall.Signal
	// KeepFDs stay open across exec; every other fd above 2 is closed.
	KeepFDs []int

	// RulesetFD is a Landlock ruleset to enforce, or -1.
	RulesetFD    int
	RulesetFlags uint32
	// BPF is a seccomp filter program (struct sock_filter[]), or nil.
	BPF []byte
	// NotifySock, when >= 0, is a unix socket the child sends the filter's
	// user-notification listener over (see ReceiveFD): the filter's
	// SECCOMP_RET_USER_NOTIF rules are then answered by the supervisor.
	// With Init, the init sends it, after the program's exec: the program
	// itself may be unable to (a filter that sends sendmsg to the
	// supervisor would stop its own sendmsg before anyone listens).
	NotifySock int
	// ProxySock is the unix socket ListenAndHandOver and OpenAndHandOver
	// operations send their descriptors over, in the operations' order (a
	// descriptor above 2; unused without one).
	ProxySock int
	// NotifyKillable loads the filter with
	// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV where the kernel has it (5.19
	// and later): once the supervisor has received a notification, only a
	// fatal signal ends the wait, so a handled signal cannot restart, and
	// repeat, a call the supervisor is carrying out for the program.
	NotifyKillable bool
}

// Process is a started child.
type Process struct {
	// Pid is the child's: the program's, or with Request.Init the init's.
	Pid int
	// PidFD is a pidfd for the child (close-on-exec), or -1 when the kernel
	// could not give one. The caller owns it.
	PidFD int

	init *C.struct_se_init
}

// Status is the program's own wait status when the child was an init
// (Request.Init) that saw the program end; ok is false otherwise (no init,
// or the init itself was killed), and the child's status is the program's.
// Call it once the child has been reaped.
func (p *Process) Status() (status unix.WaitStatus, ok bool) {
	if p.init == nil {
		return 0, false
	}
	var st C.int
	if C.se_init_status(p.init, &st) == 0 {
		return 0, false
	}
	return unix.WaitStatus(st), true
}

// initStack is the init's stack: it calls nothing deep.
const initStack = 32 << 10

// Error is a failure of the child before its program ran.
type Error struct {
	Step  Step
	Errno syscall.Errno
	// Detail names what the step was working on (a path, an op's Desc).
	Detail string
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s: %s: %s", e.Step, e.Detail, e.Errno)
	}
	return fmt.Sprintf("%s: %s", e.Step, e.Errno)
}

// ExitCode is the exit status the child ended with: 127 when the program was
// not found, 126 when it was found but could not be executed, 125 for every
// failure before that (exitRules, which the child is given too).
func (e *Error) ExitCode() int { return exitCode(exitRules, e.Step, e.Errno) }

// exitRule says which exit code the child ends with when Step fails with
// Errno (StepNone and 0 match any): the C stage's struct se_exit_rule.
type exitRule struct {
	Step  Step
	Errno syscall.Errno
	Code  int
}

// exitRules are the exit codes of failed steps, first match first, for the
// child (which exits with them) and for ExitCode alike.
var exitRules = []exitRule{
	{StepExec, unix.ENOENT, 127},
	{StepExec, unix.ENOTDIR, 127},
	{StepExec, 0, 126},
	{StepNone, 0, 125},
}

// exitCode is the code of the first rule that matches; 1 when none does
// (the C stage's se_exit_code).
func exitCode(rules []exitRule, step Step, errno syscall.Errno) int {
	for _, r := range rules {
		if (r.Step == StepNone || r.Step == step) && (r.Errno == 0 || r.Errno == errno) {
			return r.Code
		}
	}
	return 1
}

// InitialState reports the process's signal mask, its ignored signals and
// RLIMIT_NOFILE as they were before the Go runtime started. Start gives the
// program the same mask and ignored signals; the caller decides RLIMIT_NOFILE.
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

// childStackSize is the child's stack: the stage uses a few hundred bytes.
const childStackSize = 64 << 10

// Start clones the child, which applies req and execs the program. It
// returns when the program is running, or with an *Error when a step failed;
// in that case the child has already exited and must still be reaped (its
// pid is in the returned Process).
func Start(req *Request) (*Process, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	a := &arena{}
	defer a.free()
	r := (*C.struct_se_req)(a.alloc(C.sizeof_struct_se_req))
	r.procs_fd = -1
	init, closeProcs, err := newInit(r, req)
	if err != nil {
		return nil, err
	}
	defer closeProcs()
	fillProgram(a, r, req)
	fillExitRules(a, r)
	fillOps(a, r, req)
	fillRlimits(a, r, req)
	if err := fillBPF(a, r, req); err != nil {
		return nil, err
	}
	fillSignals(a, r)
	r.stack = a.alloc(childStackSize)
	r.stack_size = childStackSize

	pid, err := clone(a, r, req)
	if err != nil {
		return nil, err
	}
	if pid < 0 {
		return nil, &Error{Step: StepClone, Errno: syscall.Errno(-pid)}
	}
	p := &Process{Pid: int(pid), PidFD: int(r.pidfd), init: init}
	if r.used_clone3 == 0 {
		p.PidFD = -1
	}
	if step := Step(r.fail_step); step != StepNone {
		return p, &Error{Step: step, Errno: syscall.Errno(r.fail_errno), Detail: detail(req, step, int(r.fail_index))}
	}
	return p, nil
}

// validate refuses a request the stage could not carry out as meant.
func validate(req *Request) error {
	if req.Trial {
		if req.Init {
			return fmt.Errorf("spawn: a trial has no init")
		}
	} else if len(req.Paths) == 0 || len(req.Argv) == 0 {
		return fmt.Errorf("spawn: no program")
	}
	if req.Init && req.NamespaceFlags&unix.CLONE_NEWPID == 0 {
		return fmt.Errorf("spawn: an init needs CLONE_NEWPID")
	}
	// -1 means none; 0, 1 and 2 are the program's stdio, never ours (a
	// zero value left in a Request would otherwise mean stdin).
	for name, fd := range map[string]int{"CgroupFD": req.CgroupFD, "RulesetFD": req.RulesetFD, "NotifySock": req.NotifySock} {
		if fd >= 0 && fd <= 2 {
			return fmt.Errorf("spawn: %s is %d: -1 for none, or a descriptor above 2", name, fd)
		}
	}
	for _, op := range req.Ops {
		if (op.kind == OpListenSend || op.kind == OpOpenSend) && req.ProxySock <= 2 {
			return fmt.Errorf("spawn: %s: ProxySock is %d, not a descriptor above 2", op.why, req.ProxySock)
		}
		if op.kind == OpListenSend && !op.addr.Is4() {
			return fmt.Errorf("spawn: %s: %v is not an IPv4 address", op.why, op.addr)
		}
	}
	return nil
}

// newInit gives r its init's state, when req asks for an init: its stack
// and state in a mapping that is never unmapped (the init outlives Start),
// and cgroup.procs opened for its program where clone3 is refused. done
// closes what it opened.
func newInit(r *C.struct_se_req, req *Request) (init *C.struct_se_init, done func(), err error) {
	done = func() {}
	if !req.Init {
		return nil, done, nil
	}
	size := (initStack + int(C.sizeof_struct_se_init) + 4095) &^ 4095
	base := C.se_guard_alloc(C.size_t(size))
	if base == nil {
		return nil, done, fmt.Errorf("spawn: out of memory")
	}
	init = (*C.struct_se_init)(unsafe.Add(base, initStack))
	init.stack = base
	init.stack_size = initStack
	r.init = init
	if req.CgroupFD >= 0 && req.CgroupProcs != "" {
		// Where clone3 is refused the init's program joins through
		// cgroup.procs.
		procs, err := unix.Open(req.CgroupProcs, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, done, fmt.Errorf("spawn: %s: %w", req.CgroupProcs, err)
		}
		r.procs_fd = C.int(procs)
		done = func() { unix.Close(procs) }
	}
	return init, done, nil
}

// fillProgram copies the program, its cgroup, namespaces, descriptors and
// privileges into r.
func fillProgram(a *arena, r *C.struct_se_req, req *Request) {
	r.paths = a.strings(req.Paths)
	r.npaths = C.int(len(req.Paths))
	r.argv = a.strings(req.Argv)
	r.envp = a.strings(req.Env)
	if req.ShellFallback {
		sh := append([]string{"sh", ""}, req.Argv[1:]...)
		r.sh_argv = a.strings(sh)
		r.sh_fallback = 1
	}
	r.trial = cbool(req.Trial)
	r.cgroup_fd = C.int(req.CgroupFD)
	// Only clone3 can clone into a cgroup: without it, the child (and an
	// init's program) falls back to the legacy clone only where it need
	// not be born into one, or can join it through cgroup.procs.
	r.clone_fallback = cbool(req.CgroupFD < 0 || req.Init)
	r.prog_clone_fallback = cbool(req.CgroupFD < 0 || r.procs_fd >= 0)
	r.join_fds = a.ints(req.JoinFDs)
	r.njoin = C.int(len(req.JoinFDs))
	r.ns_flags = C.ulong(req.NamespaceFlags)
	r.unshare_flags = C.ulong(req.UnshareFlags)
	r.fg_tty = -1 // the runner's runs take the terminal (child_request in runner.c)
	r.drop_caps = cbool(req.DropCapabilities)
	r.pdeathsig = C.int(req.Pdeathsig)
	if req.Init {
		// Tied to the creating thread: should the supervisor die, the
		// init dies, and with it the whole namespace.
		r.pdeathsig = C.int(unix.SIGKILL)
	}
	r.keep_fds = a.ints(req.KeepFDs)
	r.nkeep = C.int(len(req.KeepFDs))
	r.ruleset_fd = C.int(req.RulesetFD)
	r.ruleset_flags = C.uint32_t(req.RulesetFlags)
	r.notify_sock = C.int(req.NotifySock)
	r.audit_sock = -1 // only the runner's runs read the audit log
	r.notify_killable = cbool(req.NotifyKillable)
}

// fillExitRules gives the stage Go's exit codes (exitRules).
func fillExitRules(a *arena, r *C.struct_se_req) {
	rules := unsafe.Slice((*C.struct_se_exit_rule)(a.alloc(C.sizeof_struct_se_exit_rule*C.size_t(len(exitRules)))), len(exitRules))
	for i, e := range exitRules {
		rules[i] = C.struct_se_exit_rule{step: C.int(e.Step), err: C.int(e.Errno), code: C.int(e.Code)}
	}
	r.exit_rules = &rules[0]
	r.nexit_rules = C.int(len(exitRules))
}

// fillOps copies the child's operations into r.
func fillOps(a *arena, r *C.struct_se_req, req *Request) {
	if len(req.Ops) == 0 {
		return
	}
	ops := unsafe.Slice((*C.struct_se_op)(a.alloc(C.sizeof_struct_se_op*C.size_t(len(req.Ops)))), len(req.Ops))
	for i, op := range req.Ops {
		ops[i].kind = C.int(op.kind)
		ops[i].fd = C.int(op.slot)
		ops[i].flags = C.ulong(op.num)
		ops[i].a = a.cstring(op.a)
		ops[i].b = a.cstring(op.b)
		ops[i].c = a.cstring(op.c)
		ops[i].d = a.cstring(op.d)
		ops[i].ida, ops[i].idb = op.ida.c(), op.idb.c()
		ops[i].lower_is_target = cbool(op.lowerIsTarget)
		if op.kind == OpOpenSend {
			ops[i].fd = C.int(req.ProxySock)
		}
		if op.kind == OpListenSend {
			ops[i].fd = C.int(req.ProxySock)
			ip := op.addr.As4()
			for j := range ip {
				ops[i].addr[j] = C.uchar(ip[j])
			}
			ops[i].port = [2]C.uchar{C.uchar(op.num >> 8), C.uchar(op.num)}
			ops[i].backlog = C.int(op.backlog)
		}
	}
	r.ops = &ops[0]
	r.nops = C.int(len(req.Ops))
}

// fillRlimits copies the program's rlimits into r.
func fillRlimits(a *arena, r *C.struct_se_req, req *Request) {
	if len(req.Rlimits) == 0 {
		return
	}
	lims := unsafe.Slice((*C.struct_se_rlimit)(a.alloc(C.sizeof_struct_se_rlimit*C.size_t(len(req.Rlimits)))), len(req.Rlimits))
	for i, l := range req.Rlimits {
		lims[i].resource = C.int(l.Resource)
		lims[i].cur = C.uint64_t(l.Cur)
		lims[i].max = C.uint64_t(l.Max)
	}
	r.rlimits = &lims[0]
	r.nrlimits = C.int(len(req.Rlimits))
}

// fillBPF copies the seccomp program into r.
func fillBPF(a *arena, r *C.struct_se_req, req *Request) error {
	if len(req.BPF) == 0 {
		return nil
	}
	if len(req.BPF)%8 != 0 || len(req.BPF)/8 > 0xffff {
		return fmt.Errorf("spawn: seccomp program of %d bytes is not a sock_filter array", len(req.BPF))
	}
	p := a.alloc(C.size_t(len(req.BPF)))
	copy(unsafe.Slice((*byte)(p), len(req.BPF)), req.BPF)
	r.bpf = p
	r.bpf_len = C.ushort(len(req.BPF) / 8)
	return nil
}

// fillSignals gives the program the signal mask and ignored signals the
// helper was started with.
func fillSignals(a *arena, r *C.struct_se_req) {
	mask, ignored, _ := InitialState()
	*(*unix.Sigset_t)(unsafe.Pointer(&r.mask)) = mask
	ign := make([]int, len(ignored))
	for i, s := range ignored {
		ign[i] = int(s)
	}
	r.ignored = a.ints(ign)
	r.nignored = C.int(len(ign))
}

// clone runs the stage on this thread, which its parent-death signal
// belongs to; where clone3 is refused and the child was to be born into
// its cgroup, once more with the child joining through cgroup.procs.
func clone(a *arena, r *C.struct_se_req, req *Request) (C.long, error) {
	// Keep this goroutine on the creating thread for the call (Go never
	// ends an unlocked thread).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid := C.se_spawn(r)
	if pid != -C.long(unix.ENOSYS) || req.CgroupFD < 0 || req.CgroupProcs == "" {
		return pid, nil
	}
	// The child joins by writing to cgroup.procs before anything else,
	// the way it joins v1 hierarchies.
	procs, err := unix.Open(req.CgroupProcs, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("spawn: no clone3, and the cgroup cannot be joined otherwise: %w", err)
	}
	defer unix.Close(procs)
	r.cgroup_fd = -1
	r.clone_fallback = 1
	r.join_fds = a.ints(append([]int{procs}, req.JoinFDs...))
	r.njoin = C.int(len(req.JoinFDs) + 1)
	return C.se_spawn(r), nil
}

func detail(req *Request, step Step, i int) string {
	switch step {
	case StepOp:
		if i >= 0 && i < len(req.Ops) {
			return req.Ops[i].why
		}
	case StepExec:
		if i >= 0 && i < len(req.Paths) {
			return req.Paths[i]
		}
	case StepRlimit:
		if i >= 0 && i < len(req.Rlimits) {
			return rlimitName(req.Rlimits[i].Resource)
		}
	case StepFDs:
		if i >= 0 && i < len(req.KeepFDs) {
			return fmt.Sprintf("keep fd %d", req.KeepFDs[i])
		}
	case StepCgroup:
		return "join cgroup"
	case StepClone:
		if i == 1 {
			// An init makes the namespaces other than user and PID
			// itself, once cloned.
			return "the init's unshare"
		}
	case StepCapabilities:
		if i >= 0 && i < len(capSteps) {
			return capSteps[i]
		}
	}
	return ""
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

// arena holds the C allocations of one Start; everything is freed together
// once the child has execed or exited.
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

func (a *arena) ints(v []int) *C.int {
	if len(v) == 0 {
		return nil
	}
	arr := unsafe.Slice((*C.int)(a.alloc(C.size_t(len(v))*C.sizeof_int)), len(v))
	for i, x := range v {
		arr[i] = C.int(x)
	}
	return &arr[0]
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func (a *arena) free() {
	for _, p := range a.ptrs {
		C.free(p)
	}
	a.ptrs = nil
}
