package spawn

/*
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "recipe.h"

int se_warm(struct se_service **svc, const void **record, size_t *len);
int se_forwarded_signals(int *out, int max);

static long long se_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Forwarded are the signals a run passes on to its program. The runner
// owns them (runner.c's se_forwarded): every thread of the helper has them
// blocked from its first constructor on, and only the runner reads them.
func Forwarded() []syscall.Signal {
	var buf [16]C.int
	n := int(C.se_forwarded_signals(&buf[0], C.int(len(buf))))
	out := make([]syscall.Signal, n)
	for i := range out {
		out[i] = syscall.Signal(buf[i])
	}
	return out
}

// Return is why RunRecipe returned: the runner started nothing
// (ReturnFallback) or the program failed before its exec (ReturnFailed).
type Return struct {
	Reason   ReturnReason
	Stale    bool
	FailStep Step
	// FailErrno and FailWhat say where it stopped.
	FailErrno syscall.Errno
	FailWhat  string
	// FailIndex is which of the step's items failed (an op, an rlimit).
	FailIndex int
	// ExitCode is what the exit rules give a child that failed.
	ExitCode int
}

// ReturnReason is recipe.h's enum se_return.
type ReturnReason int

// Why the runner returned.
const (
	ReturnFallback ReturnReason = C.SE_RET_FALLBACK
	ReturnFailed   ReturnReason = C.SE_RET_FAILED
	ReturnServe    ReturnReason = C.SE_RET_SERVE
)

func returnOf(h *C.struct_se_handover) Return {
	return Return{Reason: ReturnReason(h.reason), Stale: h.stale != 0, FailStep: Step(h.fail_step),
		FailErrno: syscall.Errno(h.fail_errno), FailWhat: C.GoString(&h.fail_what[0]), FailIndex: int(h.fail_index),
		ExitCode: int(h.exit_code)}
}

// Error is the child's failure as the spawn stage reports it, in the words
// of recipe's step that failed (for the program's name, argv0).
func (r Return) Error(recipe *Recipe, argv0 string) *Error {
	e := &Error{Step: r.FailStep, Errno: r.FailErrno}
	if recipe != nil {
		e.Detail = recipe.detail(r.FailStep, r.FailIndex, argv0)
	}
	return e
}

// detail names the item of step i that failed.
func (r *Recipe) detail(step Step, i int, argv0 string) string {
	switch step {
	case StepExec:
		if paths := ExecPaths(r.PathDirs, argv0); i >= 0 && i < len(paths) {
			return paths[i]
		}
	case StepOp:
		if i >= 0 && i < len(r.Ops) {
			return r.Ops[i].why
		}
	case StepRlimit:
		if i >= 0 && i < len(r.Rlimits) {
			return rlimitName(r.Rlimits[i].Resource)
		}
	case StepFDs:
		if i >= 0 && i < len(r.KeepFDs) {
			return fmt.Sprintf("keep fd %d", r.KeepFDs[i])
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

// RunRecipe carries out the recipe (Encode's bytes) for argv in this
// process, with svc serving it. It returns only when no program ran: the
// runner ends a run whose program started and exits with its code.
func RunRecipe(recipe []byte, argv []string, svc *Service) (Return, error) {
	if len(argv) == 0 {
		return Return{}, fmt.Errorf("spawn: no program")
	}
	p := C.malloc(C.size_t(len(recipe)))
	copy(unsafe.Slice((*byte)(p), len(recipe)), recipe)
	if C.se_recipe_check(p, C.size_t(len(recipe))) != 1 {
		C.free(p)
		return Return{}, fmt.Errorf("spawn: invalid recipe")
	}
	a := &arena{}
	cargv := a.strings(argv)
	var h C.struct_se_handover
	// The stage's parent-death signal belongs to this thread, which Go
	// keeps (it never ends an unlocked thread); the runner waits on it.
	runtime.LockOSThread()
	C.se_run((*C.struct_se_recipe)(p), cargv, nil, nil, svc.c, &h)
	runtime.UnlockOSThread()
	a.free()
	C.free(p)
	return returnOf(&h), nil
}

// Service is how the runner calls on Go while a program runs (recipe.h's
// struct se_service): events arrive on Events, and Go answers the end.
type Service struct {
	c *C.struct_se_service
	// Events carries each event the runner sends: EventListener,
	// EventProxy, EventAudit, EventEnded (then Ended says how),
	// EventStarted.
	Events <-chan byte
}

// The service's events.
const (
	EventStarted  = 'S'
	EventListener = 'L'
	EventProxy    = 'P'
	EventAudit    = 'A'
	EventEnded    = 'E'
)

// NewService makes the service of a run Go starts itself.
func NewService() (*Service, error) {
	c := C.se_service_new()
	if c == nil {
		return nil, errors.New("spawn: service: out of memory or descriptors")
	}
	return serviceOf(c), nil
}

func serviceOf(c *C.struct_se_service) *Service {
	relayTo(int(c.sig_w))
	ev := make(chan byte, 4)
	v := &Service{c: c, Events: ev}
	f := os.NewFile(uintptr(c.ev_r), "service events")
	go func() {
		defer close(ev)
		var b [1]byte
		for {
			if n, err := f.Read(b[:]); n != 1 || err != nil {
				return
			}
			ev <- b[0]
		}
	}()
	return v
}

// Listener is the seccomp listener (EventListener): the caller owns it.
func (v *Service) Listener() int { return int(v.c.listener_fd) }

// ProxyListener is the proxy's listening socket (EventProxy).
func (v *Service) ProxyListener() int { return int(v.c.proxy_fd) }

// AuditLog is what the runner opened for reading the run's file denials
// (EventAudit): the kernel audit log's socket (the caller owns it), or -1
// and the errno the kernel refused it with; the pid that made the run's
// Landlock domain and the name it took then (pid 0: it did not say).
type AuditLog struct {
	FD      int
	Err     syscall.Errno
	Creator int
	Comm    string
}

// Audit is the run's AuditLog, once EventAudit came.
func (v *Service) Audit() AuditLog {
	return AuditLog{FD: int(v.c.audit_fd), Err: syscall.Errno(v.c.audit_err), Creator: int(v.c.audit_pid),
		Comm: C.GoString(&v.c.audit_comm[0])}
}

// Layers is the scratch caches' layers the child handed over
// (OpenAndHandOver), once EventEnded came, or -1: the caller owns it.
func (v *Service) Layers() int { return int(v.c.layers_fd) }

// Ended is how the run ended (EventEnded).
type Ended struct {
	// Ending is one of the End constants; Status the wait status of the
	// program (its init's where it had none); ExitCode the helper's.
	Ending   int
	Status   syscall.WaitStatus
	ExitCode int
	// Started is when the runner began, ProgramStarted when the program
	// did, Finished when its tree was gone.
	Started, ProgramStarted, Finished time.Time
	// CgroupName names the run's cgroup directories ("" for none).
	CgroupName string
}

// Ended reads how the run ended, once EventEnded came.
func (v *Service) Ended() Ended {
	now := time.Now()
	mono := int64(C.se_mono_ns())
	at := func(ns C.int64_t) time.Time { return now.Add(-time.Duration(mono - int64(ns))) }
	return Ended{Ending: int(v.c.ending), Status: syscall.WaitStatus(v.c.status), ExitCode: int(v.c.exit_code),
		Started: at(v.c.started_ns), ProgramStarted: at(v.c.program_ns), Finished: at(v.c.ended_ns),
		CgroupName: C.GoString(&v.c.cgroup_name[0])}
}

// ProgramStarted is when the program started (any event after
// EventStarted), and the runner began.
func (v *Service) ProgramStarted() (runner, program time.Time) {
	now := time.Now()
	mono := int64(C.se_mono_ns())
	return now.Add(-time.Duration(mono - int64(v.c.started_ns))), now.Add(-time.Duration(mono - int64(v.c.program_ns)))
}

// Hold makes the helper's exit wait for work Go does while the program
// runs, until release is called (once): the runner ends the run as ever,
// then waits before it exits. For a service made by NewService, before
// RunRecipe.
func (v *Service) Hold() (release func(), err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("spawn: service: %w", err)
	}
	v.c.hold_r = C.int32_t(p[0])
	return func() { unix.Close(p[1]) }, nil
}

// Done lets the runner clean up and exit after EventEnded.
func (v *Service) Done() { v.answer('D') }

// Fail asks the runner to end the tree: Go cannot serve the run.
func (v *Service) Fail() { v.answer('K') }

func (v *Service) answer(b byte) {
	buf := [1]byte{b}
	_, _ = unix.Write(int(v.c.ack_w), buf[:])
}

// WarmState says what the warm path did before the Go runtime started.
type WarmState int

// What the warm path did.
const (
	// WarmNone: no stored recipe applied (none for this invocation, or
	// one whose dependencies no longer hold).
	WarmNone WarmState = iota
	// WarmFellBack: a stored recipe applied, and the runner started
	// nothing (Go decides and runs the run).
	WarmFellBack
	// WarmServing: the runner started the program from a stored recipe
	// and goes on with the run in a thread of its own; Go serves it
	// (Warm's Service) from the service record stored with the recipe.
	WarmServing
)

// Warm reports what the warm path did, and for WarmServing the run's
// service and the service record stored with its recipe.
func Warm() (WarmState, *Service, []byte) {
	var c *C.struct_se_service
	var rec unsafe.Pointer
	var n C.size_t
	st := WarmState(C.se_warm(&c, &rec, &n))
	if st != WarmServing || c == nil {
		return st, nil, nil
	}
	return st, serviceOf(c), C.GoBytes(rec, C.int(n))
}
