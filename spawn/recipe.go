package spawn

/*
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "recipe.h"

static long long se_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// Recipe is a whole run, every decision made, laid out for the runner
// (runner.c), which carries it out without the Go runtime: see recipe.h.
// Encode turns it into the bytes RunRecipe, and a stored recipe, hold.
type Recipe struct {
	// Roots are writable roots to make (each one directory, in a parent
	// that exists) before the run.
	Roots []string
	// SharedTmp is the shared mount point of private temp dirs, made
	// 0700 when missing and checked (hostfacts.CheckSharedTmp), or "".
	SharedTmp string
	// Claims are the placeholder groups the run claims (mountns.ClaimPlan).
	Claims []RecipeClaim
	// Cgroups are the run's cgroup directories (cgroups.Recipe), the v2
	// one first.
	Cgroups []RecipeCgroup
	// SweepRequest is the guardian's request for a sweep (GuardianSpec);
	// SweepStamps say when sweeps last began: a run with a sweep due is
	// not the runner's.
	SweepRequest string
	SweepStamps  []SweepStamp
	Guardian     GuardianTimings

	Landlock RecipeLandlock

	// The child, as Request says: Env, the PATH entries a name without a
	// slash is searched in (cleaned; "." for an empty entry), and the rest.
	Env            []string
	PathDirs       []string
	ShellFallback  bool
	Init           bool
	NamespaceFlags uintptr
	UnshareFlags   uintptr
	// CloneFallback and ProgCloneFallback are the stage's clone3→clone
	// fallbacks (see fillProgram): Go's choice, for the cgroup the recipe
	// makes.
	CloneFallback, ProgCloneFallback bool
	DropCapabilities                 bool
	Pdeathsig                        syscall.Signal
	Ops                              []Op
	Rlimits                          []Rlimit
	BPF                              []byte
	// Notify: the filter has a listener the supervisor answers (socket
	// mediation); its first notification hands the run over to Go.
	Notify, NotifyKillable bool

	// Timeout is the wall-clock limit (0: none); CPUCheck the CPU
	// budget's first look (0: no budget): each hands the run over to Go.
	Timeout, CPUCheck time.Duration
	// OOMWatch: an OOM kill in the group hands the run over (1: watched in
	// the v1 memory directory, 2: in the v2 directory's memory.events).
	OOMWatch int
	// EndInGo hands the run over once the child is reaped, before any
	// cleanup: for a run whose end Go reports (the cgroup's figures are
	// read before it goes).
	EndInGo bool
	// Forwarded are the signals passed on to the program.
	Forwarded []syscall.Signal
}

// RecipeClaim is a placeholder group (mountns.ClaimGroup).
type RecipeClaim struct {
	Parent, Dir  string
	Placeholders []string
}

// RecipeCgroup is a cgroup directory (cgroups.RecipeDir).
type RecipeCgroup struct {
	Parent  string
	Require string
	Writes  []RecipeCgroupWrite
	V2      bool
	Join    bool
}

// RecipeCgroupWrite is a limit write (cgroups.RecipeWrite).
type RecipeCgroupWrite struct {
	File, Value          string
	MayMiss, SwapAccount bool
}

// SweepStamp is a state file touched when a sweep begins, and how old it
// may be before the next sweep is due.
type SweepStamp struct {
	Path  string
	Every time.Duration
}

// RecipeLandlock is the ruleset (landlock.Spec, built the way Build does).
type RecipeLandlock struct {
	ABI                    int
	RestrictFlags          uint32
	HandledFS, HandledNet  uint64
	Scoped                 uint64
	FileRights, NetConnect uint64
	Rules                  []RecipeRule
	Ports                  []uint16
}

// RecipeRule is a Landlock path rule.
type RecipeRule struct {
	Path     string
	Access   uint64
	Required bool
	// Listed is landlock.Rule.Listed: 1 a directory, 2 another type, as
	// the path's directory listing gave it; 0 when not listed. The runner
	// takes it instead of a stat for a rule that is not Required.
	Listed uint8
}

// recipeWriter lays a recipe out: the header, then each string and array,
// 8-byte aligned, referenced by offset.
type recipeWriter struct{ buf []byte }

func (w *recipeWriter) align() {
	for len(w.buf)%8 != 0 {
		w.buf = append(w.buf, 0)
	}
}

func (w *recipeWriter) str(s string) C.struct_se_rref {
	if s == "" {
		return C.struct_se_rref{}
	}
	w.align()
	off := len(w.buf)
	w.buf = append(append(w.buf, s...), 0)
	return C.struct_se_rref{off: C.uint32_t(off), n: C.uint32_t(len(s))}
}

func (w *recipeWriter) bytes(b []byte) C.struct_se_rref {
	if len(b) == 0 {
		return C.struct_se_rref{}
	}
	w.align()
	off := len(w.buf)
	w.buf = append(w.buf, b...)
	return C.struct_se_rref{off: C.uint32_t(off), n: C.uint32_t(len(b))}
}

// records appends n records of size bytes each, made by fill into a
// zeroed slot.
func records[T any](w *recipeWriter, items []T) C.struct_se_rref {
	if len(items) == 0 {
		return C.struct_se_rref{}
	}
	w.align()
	off := len(w.buf)
	size := int(unsafe.Sizeof(items[0]))
	for i := range items {
		w.buf = append(w.buf, unsafe.Slice((*byte)(unsafe.Pointer(&items[i])), size)...)
	}
	return C.struct_se_rref{off: C.uint32_t(off), n: C.uint32_t(len(items))}
}

func (w *recipeWriter) strs(ss []string) C.struct_se_rref {
	refs := make([]C.struct_se_rref, len(ss))
	for i, s := range ss {
		refs[i] = w.str(s)
	}
	return records(w, refs)
}

// Encode lays the recipe out as the runner reads it (struct se_recipe and
// what it references).
func (r *Recipe) Encode() []byte {
	var h C.struct_se_recipe
	w := &recipeWriter{buf: make([]byte, unsafe.Sizeof(h), 4096)}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&h.magic[0])), 8), C.SE_RCP_MAGIC)
	h.version = C.SE_RCP_VERSION

	h.roots = w.strs(r.Roots)
	h.shared_tmp = w.str(r.SharedTmp)
	claims := make([]C.struct_se_rclaim, len(r.Claims))
	for i, c := range r.Claims {
		claims[i] = C.struct_se_rclaim{parent: w.str(c.Parent), dir: w.str(c.Dir), placeholders: w.strs(c.Placeholders)}
	}
	h.claims = records(w, claims)
	cgs := make([]C.struct_se_rcg, len(r.Cgroups))
	for i, c := range r.Cgroups {
		ws := make([]C.struct_se_rwrite, len(c.Writes))
		for j, x := range c.Writes {
			ws[j] = C.struct_se_rwrite{file: w.str(x.File), value: w.str(x.Value)}
			switch {
			case x.MayMiss:
				ws[j].missing = C.SE_MAY_MISS
			case x.SwapAccount:
				ws[j].missing = C.SE_SWAP_ACCOUNT
			}
		}
		cgs[i] = C.struct_se_rcg{parent: w.str(c.Parent), require: w.str(c.Require), writes: records(w, ws),
			v2: cbool32(c.V2), join: cbool32(c.Join)}
	}
	h.cgroups = records(w, cgs)
	h.sweep_request = w.str(r.SweepRequest)
	stamps := make([]C.struct_se_rstamp, len(r.SweepStamps))
	for i, s := range r.SweepStamps {
		stamps[i] = C.struct_se_rstamp{path: w.str(s.Path), every_s: C.int64_t(s.Every / time.Second)}
	}
	h.sweep_stamps = records(w, stamps)
	t := r.Guardian.orDefaults()
	h.guard_kill_rounds = C.int32_t(t.KillRounds)
	h.guard_kill_interval_ms = C.int32_t(t.KillInterval.Milliseconds())
	h.guard_child_wait_ms = C.int32_t(t.ChildWait.Milliseconds())
	h.guard_ready_wait_ms = C.int32_t(t.ReadyWait.Milliseconds())

	l := r.Landlock
	h.ll_abi = C.int32_t(l.ABI)
	h.ll_restrict_flags = C.uint32_t(l.RestrictFlags)
	h.ll_handled_fs, h.ll_handled_net, h.ll_scoped = C.uint64_t(l.HandledFS), C.uint64_t(l.HandledNet), C.uint64_t(l.Scoped)
	h.ll_file_rights, h.ll_net_connect = C.uint64_t(l.FileRights), C.uint64_t(l.NetConnect)
	rules := make([]C.struct_se_rll, len(l.Rules))
	for i, x := range l.Rules {
		rules[i] = C.struct_se_rll{path: w.str(x.Path), access: C.uint64_t(x.Access), required: cbool32(x.Required), listed: C.int32_t(x.Listed)}
	}
	h.ll_paths = records(w, rules)
	h.ll_ports = records(w, l.Ports)

	h.env = w.strs(r.Env)
	h.path_dirs = w.strs(r.PathDirs)
	h.sh_fallback = cbool32(r.ShellFallback)
	h.init, h.drop_caps, h.pdeathsig = cbool32(r.Init), cbool32(r.DropCapabilities), C.int32_t(r.Pdeathsig)
	h.ns_flags, h.unshare_flags = C.uint64_t(r.NamespaceFlags), C.uint64_t(r.UnshareFlags)
	h.clone_fallback, h.prog_clone_fallback = cbool32(r.CloneFallback), cbool32(r.ProgCloneFallback)
	h.notify, h.notify_killable = cbool32(r.Notify), cbool32(r.NotifyKillable)
	ops := make([]C.struct_se_rop, len(r.Ops))
	for i, op := range r.Ops {
		ops[i] = C.struct_se_rop{kind: C.int32_t(op.kind), slot: C.int32_t(op.slot), flags: C.uint64_t(op.num),
			a: w.str(op.a), b: w.str(op.b), c: w.str(op.c), d: w.str(op.d)}
	}
	h.ops = records(w, ops)
	lims := make([]C.struct_se_rlimit, len(r.Rlimits))
	for i, x := range r.Rlimits {
		lims[i] = C.struct_se_rlimit{resource: C.int(x.Resource), cur: C.uint64_t(x.Cur), max: C.uint64_t(x.Max)}
	}
	h.rlimits = records(w, lims)
	rulesC := make([]C.struct_se_exit_rule, len(exitRules))
	for i, e := range exitRules {
		rulesC[i] = C.struct_se_exit_rule{step: C.int(e.Step), err: C.int(e.Errno), code: C.int(e.Code)}
	}
	h.exit_rules = records(w, rulesC)
	h.bpf = w.bytes(r.BPF)

	h.timeout_ms = C.int64_t(r.Timeout.Milliseconds())
	h.cpu_check_ms = C.int64_t(r.CPUCheck.Milliseconds())
	h.oom_watch = C.int32_t(r.OOMWatch)
	h.end_in_go = cbool32(r.EndInGo)
	fw := make([]int32, len(r.Forwarded))
	for i, s := range r.Forwarded {
		fw[i] = int32(s)
	}
	h.forwarded = records(w, fw)

	w.align()
	h.size = C.uint32_t(len(w.buf))
	copy(w.buf, unsafe.Slice((*byte)(unsafe.Pointer(&h)), unsafe.Sizeof(h)))
	return w.buf
}

// recipeRecords are the record types a recipe holds, for the test that
// they have no implicit padding: records are copied byte for byte, and
// padding the compiler leaves unwritten would make two encodings of one
// recipe differ.
func recipeRecords() []any {
	return []any{C.struct_se_recipe{}, C.struct_se_rref{}, C.struct_se_rop{}, C.struct_se_rwrite{}, C.struct_se_rcg{},
		C.struct_se_rclaim{}, C.struct_se_rstamp{}, C.struct_se_rll{}, C.struct_se_rlimit{}, C.struct_se_exit_rule{}}
}

func cbool32(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// Validate reports whether Encode's output is a recipe the runner accepts
// (the runner's own check).
func ValidRecipe(b []byte) bool {
	if len(b) < int(unsafe.Sizeof(C.struct_se_recipe{})) {
		return false
	}
	p := C.malloc(C.size_t(len(b)))
	defer C.free(p)
	copy(unsafe.Slice((*byte)(p), len(b)), b)
	return C.se_recipe_check(p, C.size_t(len(b))) == 1
}

// FallbackSweepDue begins Handover.FailWhat when the runner started
// nothing because the stale sweep, which is Go's, is due.
const FallbackSweepDue = "sweep due"

// WarmOff is the environment variable that turns the warm path off when
// set to "off": no run is carried out from a stored recipe, and none is
// stored.
const WarmOff = "SANDBOX_EXECUTABLE_WARM"

// HandoverReason says why the runner gave a run to Go.
type HandoverReason int

// Reasons (recipe.h's enum se_handover_reason).
const (
	HandoverFallback HandoverReason = C.SE_HO_FALLBACK // nothing ran: Go runs it
	HandoverNotify   HandoverReason = C.SE_HO_NOTIFY   // a seccomp notification waits
	HandoverTimeout  HandoverReason = C.SE_HO_TIMEOUT  // the wall-clock limit passed
	HandoverCPU      HandoverReason = C.SE_HO_CPU      // the CPU budget is due for a look
	HandoverOOM      HandoverReason = C.SE_HO_OOM      // an OOM event in the group
	HandoverEnded    HandoverReason = C.SE_HO_ENDED    // the child was reaped: Go ends the tree and cleans up
)

var handoverNames = map[HandoverReason]string{HandoverFallback: "fallback", HandoverNotify: "notification",
	HandoverTimeout: "timeout", HandoverCPU: "cpu budget", HandoverOOM: "oom", HandoverEnded: "ended"}

func (r HandoverReason) String() string {
	if n, ok := handoverNames[r]; ok {
		return n
	}
	return fmt.Sprintf("handover %d", int(r))
}

// Handover is a run the runner started and gave to Go, or (Fallback) did
// not start at all.
type Handover struct {
	Reason HandoverReason
	// Fallback: where the runner stopped (for the debug log).
	FailStep  Step
	FailErrno syscall.Errno
	FailWhat  string

	// CgroupName is the name of the run's cgroup directories, "" for none.
	CgroupName string
	// Proc is the child (the init, or the program without one).
	Proc *Process
	// Exited (Ended): the child was reaped; Status is its wait status (the
	// program's, where the init recorded it).
	Exited bool
	Status syscall.WaitStatus
	// ListenerFD is the seccomp listener the supervisor answers, or -1.
	ListenerFD int
	// sigR and sigW are the pipe the signals are still caught into
	// (Signals takes it over).
	sigR, sigW int
	// Guardian is the run's guardian, or nil.
	Guardian *Guardian
	// ClaimFDs are the placeholder groups' locks, in the recipe's order,
	// and Locks what the guardian guards with them.
	ClaimFDs []int
	Locks    []GuardedLock
	// Terminal is the caller's terminal as the runner found it, to put
	// back when the run ends.
	Terminal *Terminal
	// Started is when the runner began; ProgramStarted when the program
	// did.
	Started, ProgramStarted time.Time
}

// RunRecipe carries out the recipe (Encode's bytes) for argv in this
// process. It returns only to hand the run over (or to fall back, when
// nothing ran): when the program's end ends the run, the process exits
// with its status there and then, as the supervisor would have.
func RunRecipe(recipe []byte, argv []string) (*Handover, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("spawn: no program")
	}
	p := C.malloc(C.size_t(len(recipe)))
	defer C.free(p)
	copy(unsafe.Slice((*byte)(p), len(recipe)), recipe)
	if C.se_recipe_check(p, C.size_t(len(recipe))) != 1 {
		return nil, fmt.Errorf("spawn: invalid recipe")
	}
	a := &arena{}
	defer a.free()
	cargv := a.strings(argv)
	var h C.struct_se_handover
	// The stage's parent-death signal belongs to this thread, which Go
	// keeps (it never ends an unlocked thread).
	runtime.LockOSThread()
	C.se_run((*C.struct_se_recipe)(p), cargv, nil, nil, &h)
	runtime.UnlockOSThread()
	return handoverOf(&h), nil
}

// handoverOf turns the runner's struct into Go's.
func handoverOf(h *C.struct_se_handover) *Handover {
	out := &Handover{Reason: HandoverReason(h.reason), FailStep: Step(h.fail_step), FailErrno: syscall.Errno(h.fail_errno),
		FailWhat: C.GoString(&h.fail_what[0]), ListenerFD: -1}
	if out.Reason == HandoverFallback {
		return out
	}
	out.CgroupName = C.GoString(&h.cgroup_name[0])
	out.Proc = &Process{Pid: int(h.pid), PidFD: int(h.pidfd), Notes: int(h.notes_fd), init: h.init}
	out.Exited, out.Status = h.exited != 0, syscall.WaitStatus(h.status)
	out.ListenerFD = int(h.listener_fd)
	out.Terminal = &Terminal{t: h.term}
	now := time.Now()
	mono := int64(C.se_mono_ns())
	out.Started = now.Add(-time.Duration(mono - int64(h.started_ns)))
	out.ProgramStarted = now.Add(-time.Duration(mono - int64(h.program_ns)))
	if h.guard != nil {
		out.Guardian = &Guardian{Pid: int(h.guard_pid), w: int(h.guard_w), g: h.guard}
		if h.locks != nil {
			locks := unsafe.Slice(h.locks, int(h.nclaims))
			for _, l := range locks {
				gl := GuardedLock{FD: int(l.fd)}
				if l.nph > 0 {
					for _, ph := range unsafe.Slice(l.ph, int(l.nph)) {
						gl.Placeholders = append(gl.Placeholders, GuardedDir{Path: C.GoString(ph.path), Record: C.GoString(ph.record),
							Dev: uint64(ph.dev), Ino: uint64(ph.ino)})
						d := &gl.Placeholders[len(gl.Placeholders)-1]
						d.Ctime.Sec, d.Ctime.Nsec = int64(ph.ctime_sec), int64(ph.ctime_nsec)
					}
				}
				out.Locks = append(out.Locks, gl)
			}
		}
	}
	for i := 0; i < int(h.nclaims); i++ {
		out.ClaimFDs = append(out.ClaimFDs, int(h.claim_fds[i]))
	}
	out.sigR, out.sigW = int(h.sig_r), int(h.sig_w)
	return out
}

// Signals takes over the signals the runner caught, sigs (the same set it
// was given: the recipe's Forwarded and SIGCHLD), through the same pipe:
// the C handler is installed again (the Go runtime replaced it when it
// started after the runner, which a stored recipe's run does).
func (h *Handover) Signals(sigs []syscall.Signal) (*Caught, error) {
	return catchOn(h.sigR, h.sigW, sigs)
}

// RecipeLandlockRules returns the Landlock path rules of an encoded recipe
// (Encode's, one ValidRecipe accepts), or false when it is not one.
func RecipeLandlockRules(b []byte) ([]RecipeRule, bool) {
	if !ValidRecipe(b) {
		return nil, false
	}
	var h C.struct_se_recipe
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&h)), unsafe.Sizeof(h)), b)
	str := func(r C.struct_se_rref) (string, bool) {
		off, n := uint64(r.off), uint64(r.n)
		if n == 0 {
			return "", true
		}
		if off > uint64(len(b)) || n > uint64(len(b))-off {
			return "", false
		}
		return string(b[off : off+n]), true
	}
	var rl C.struct_se_rll
	size := uint64(unsafe.Sizeof(rl))
	off, n := uint64(h.ll_paths.off), uint64(h.ll_paths.n)
	if n > 0 && (off > uint64(len(b)) || n > (uint64(len(b))-off)/size) {
		return nil, false
	}
	rules := make([]RecipeRule, 0, n)
	for i := uint64(0); i < n; i++ {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&rl)), size), b[off+i*size:])
		p, ok := str(rl.path)
		if !ok {
			return nil, false
		}
		rules = append(rules, RecipeRule{Path: p, Access: uint64(rl.access), Required: rl.required != 0, Listed: uint8(rl.listed)})
	}
	return rules, true
}
