package spawn

/*
#include <stdlib.h>
#include <string.h>
#include "recipe.h"
*/
import "C"

import (
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
	// TmpDir is a private temp dir of the run's own, open at TmpFD in this
	// process (no mount namespace; Go made it), with its record: the
	// guardian removes it should the helper die. TmpFD is -1 without one.
	TmpDir, TmpRecord string
	TmpFD             int
	// Claims are the placeholder groups the run claims (mountns.ClaimPlan).
	Claims []RecipeClaim
	// Cgroups are the run's cgroup directories (cgroups.Recipe), the v2
	// one first; CgroupMade the parents made for this run, deepest first,
	// removed after them when empty.
	Cgroups    []RecipeCgroup
	CgroupMade []string
	// SweepRequest is the guardian's request for a sweep (GuardianSpec);
	// SweepStamps say when sweeps last began: a run with a sweep due is
	// not the runner's.
	SweepRequest string
	SweepStamps  []SweepStamp
	Guardian     GuardianTimings

	Landlock RecipeLandlock

	// The child (stage.h's struct se_req): Env, the PATH entries a name
	// without a slash is searched in (cleaned; "." for an empty entry),
	// and the rest.
	Env            []string
	PathDirs       []string
	ShellFallback  bool
	Init           bool
	NamespaceFlags uintptr
	UnshareFlags   uintptr
	// CloneFallback and ProgCloneFallback are the stage's clone3→clone
	// fallbacks for the child and an init's program (se_req's
	// clone_fallback): Go's choice, for the cgroup the recipe makes.
	CloneFallback, ProgCloneFallback bool
	DropCapabilities                 bool
	Pdeathsig                        syscall.Signal
	Ops                              []Op
	Rlimits                          []Rlimit
	BPF                              []byte
	// Notify: the filter has a listener the supervisor answers (socket
	// mediation); its first notification hands the run over to Go.
	Notify, NotifyKillable bool

	// KeepFDs are descriptors the program keeps (--keep-fd).
	KeepFDs []int

	// Timeout is the wall-clock limit (0: none), Grace the time between
	// its SIGTERM and the tree's kill.
	Timeout, Grace time.Duration
	// CPUBudget is the tree's CPU time (0: none), read in CPUUsage, looked
	// at again when what is left could be spent by CPUSpread CPUs.
	CPUBudget time.Duration
	CPUSpread int
	// OOMWatch: an OOM kill in the group ends the tree (1: watched in the
	// v1 memory directory, 2: in the v2 directory's memory.events).
	OOMWatch int
	// CPUUsage, OOMKills and PidsHits are the figures the runner reads in
	// the group: the tree's CPU time, its OOM kills, the forks the pids
	// limit refused (an ending's name).
	CPUUsage, OOMKills, PidsHits RecipeCounter
	// EndInGo calls Go's service before the run's cleanup, for a run whose
	// end Go reports (the cgroup's figures are read before it goes);
	// GoFromStart calls it as soon as the program runs (a listener that
	// records denials, the proxy).
	EndInGo, GoFromStart bool
	// Proxy: the child's ListenAndHandOver sends the proxy's listener;
	// Layers: its OpenAndHandOver then sends the scratch layers.
	Proxy, Layers bool
	// Audit: the runner opens the kernel audit log's socket before the
	// program exists, the program marks its Landlock domain as the run's,
	// and Go reads the run's file denials from the start (Service.Audit).
	Audit bool
	// Say is the line said on stderr as the run starts (index 0) and when
	// it ends each way (an Ending's index, EndingIndex), "" for none.
	Say [EndingsN]string
}

// RecipeCounter is a figure in one of the run's cgroup directories (index
// Cgroup, -1 for none): the number after Key on a line of File, or the
// whole file when Key is "", times Scale.
type RecipeCounter struct {
	Cgroup    int
	File, Key string
	Scale     uint64
}

// NoCounter is a counter the runner never reads.
var NoCounter = RecipeCounter{Cgroup: -1}

// How the runner ends a run (recipe.h's enum se_ending): an index of
// Recipe.Say.
const (
	EndExited   = C.SE_END_EXITED
	EndSignaled = C.SE_END_SIGNALED
	EndTimeout  = C.SE_END_TIMEOUT
	EndCPU      = C.SE_END_CPU
	EndOOM      = C.SE_END_OOM
	EndPids     = C.SE_END_PIDS
	EndService  = C.SE_END_SERVICE
	EndFsize    = C.SE_END_FSIZE
	EndingsN    = C.SE_END_N
)

// RecipeClaim is a placeholder group (mountns.ClaimGroup): the runner takes
// Parent once, without following a link, and requires it to be ParentID.
type RecipeClaim struct {
	Parent, Dir  string
	ParentID     Ident
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

// RecipeRule is a Landlock path rule (landlock.Rule): on Path, or with
// Entries on each entry the runner finds in the directory Path but the
// names in Except.
type RecipeRule struct {
	Path     string
	Access   uint64
	Required bool
	Entries  bool
	Except   []string
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
	h.tmp_dir, h.tmp_record, h.tmp_fd = w.str(r.TmpDir), w.str(r.TmpRecord), -1
	if r.TmpDir != "" {
		h.tmp_fd = C.int32_t(r.TmpFD)
	}
	claims := make([]C.struct_se_rclaim, len(r.Claims))
	for i, c := range r.Claims {
		claims[i] = C.struct_se_rclaim{parent: w.str(c.Parent), parent_id: c.ParentID.c(), dir: w.str(c.Dir), placeholders: w.strs(c.Placeholders)}
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
	h.cgroup_made = w.strs(r.CgroupMade)
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
		rules[i] = C.struct_se_rll{path: w.str(x.Path), except: w.strs(x.Except), access: C.uint64_t(x.Access), required: cbool32(x.Required), entries: cbool32(x.Entries)}
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
			a: w.str(op.a), b: w.str(op.b), c: w.str(op.c), d: w.str(op.d), ida: op.ida.c(), idb: op.idb.c(),
			lower_is_target: cbool32(op.lowerIsTarget)}
		if op.kind == OpListenSend {
			ip := op.addr.As4()
			for j := range ip {
				ops[i].addr[j] = C.uchar(ip[j])
			}
			ops[i].port = [2]C.uchar{C.uchar(op.num >> 8), C.uchar(op.num)}
			ops[i].backlog = C.int32_t(op.backlog)
		}
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

	h.keep_fds = records(w, int32s(r.KeepFDs))
	h.timeout_ms = C.int64_t(r.Timeout.Milliseconds())
	h.grace_ms = C.int64_t(r.Grace.Milliseconds())
	h.cpu_budget_ns = C.int64_t(r.CPUBudget.Nanoseconds())
	h.cpu_spread = C.int32_t(r.CPUSpread)
	h.oom_watch = C.int32_t(r.OOMWatch)
	h.cpu_usage, h.oom_kills, h.pids_hits = w.counter(r.CPUUsage), w.counter(r.OOMKills), w.counter(r.PidsHits)
	h.end_in_go, h.go_from_start, h.proxy, h.layers = cbool32(r.EndInGo), cbool32(r.GoFromStart), cbool32(r.Proxy), cbool32(r.Layers)
	h.audit = cbool32(r.Audit)
	h.say = w.strs(r.Say[:])
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
		C.struct_se_rclaim{}, C.struct_se_rstamp{}, C.struct_se_rll{}, C.struct_se_rlimit{}, C.struct_se_exit_rule{},
		C.struct_se_rcounter{}, C.struct_se_ident{}}
}

func (w *recipeWriter) counter(c RecipeCounter) C.struct_se_rcounter {
	if c.File == "" {
		return C.struct_se_rcounter{cg: -1}
	}
	return C.struct_se_rcounter{cg: C.int32_t(c.Cgroup), file: w.str(c.File), key: w.str(c.Key), scale: C.uint64_t(c.Scale)}
}

func (id Ident) c() C.struct_se_ident {
	return C.struct_se_ident{kind: C.int(id.kind), dev: C.uint64_t(id.Dev), ino: C.uint64_t(id.Ino)}
}

func int32s(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

func cbool32(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// ValidRecipe reports whether Encode's output is a recipe the runner accepts
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

// FallbackSweepDue begins Return.FailWhat when the runner started
// nothing because the stale sweep, which is Go's, is due.
const FallbackSweepDue = "sweep due"

// WarmOff is the environment variable that turns the warm path off when
// set to "off": no run is carried out from a stored recipe, and none is
// stored.
const WarmOff = "SANDBOX_EXECUTABLE_WARM"
