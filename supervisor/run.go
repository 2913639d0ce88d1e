package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/spawn"
)

// Ending says how a run ended.
type Ending string

// Endings.
const (
	Exited       Ending = "exited"
	Signaled     Ending = "signaled"
	Timeout      Ending = "timeout"
	CPUBudget    Ending = "cpu_budget"
	OOM          Ending = "oom"
	PidsLimitHit Ending = "pids_limit_hit"
	SetupFailed  Ending = "setup_failed"
	Refused      Ending = "refused"
)

// Exit codes of the helper itself.
const (
	ExitTimeout       = 124
	ExitSetup         = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// Result is how a run ended.
type Result struct {
	Ending   Ending
	ExitCode int
	// Signal is the signal that ended the program, when Ending is signaled.
	Signal syscall.Signal
	// Err is the setup failure or refusal, when there was one.
	Err error
	// Started is true once the program's exec succeeded.
	Started bool
	Wall    time.Duration
}

// forwarded are the signals passed on to the program.
var forwarded = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// Run builds the kernel objects for pr, starts the program and supervises
// it until it and everything it started are gone.
func Run(pr *Prepared) Result {
	start := time.Now()
	res := run(pr)
	res.Wall = time.Since(start)
	return res
}

func run(pr *Prepared) Result {
	cfg := pr.cfg
	p := pr.Plan

	rulesetFD, err := pr.Landlock.Build()
	if err != nil {
		return setupFailed(err)
	}
	if rulesetFD >= 0 {
		defer unix.Close(rulesetFD)
	}

	// Signals that arrive from here on are queued and forwarded once the
	// program exists.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	// Orphans of the sandbox become our children, so none of them outlives
	// the run unseen.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return setupFailed(fmt.Errorf("child subreaper: %w", err))
	}

	req := &spawn.Request{
		Paths:         pr.Candidates,
		Argv:          pr.Argv,
		Env:           p.Env.Vars,
		ShellFallback: true,
		CgroupFD:      -1,
		CgroupProcsFD: -1,
		Pdeathsig:     unix.SIGKILL,
		KeepFDs:       cfg.KeepFDs,
		RulesetFD:     rulesetFD,
		RulesetFlags:  pr.Landlock.RestrictFlags,
		BPF:           pr.Seccomp.BPF,
	}
	for _, l := range pr.Rlimits {
		req.Rlimits = append(req.Rlimits, spawn.Rlimit{Resource: l.Resource, Cur: l.Cur, Max: l.Max})
	}

	proc, err := spawn.Start(req)
	if proc == nil {
		return setupFailed(err)
	}
	if proc.PidFD >= 0 {
		defer unix.Close(proc.PidFD)
	}

	reaper := newReaper(proc.Pid)
	go reaper.loop()

	if err != nil {
		// The child exited before its program ran; reap it.
		<-reaper.main
		<-reaper.done
		var se *spawn.Error
		if errors.As(err, &se) {
			return Result{Ending: SetupFailed, ExitCode: se.ExitCode(), Err: err}
		}
		return setupFailed(err)
	}

	t := &tree{self: os.Getpid()}
	timeout := time.NewTimer(time.Duration(p.Limits.TimeoutSeconds) * time.Second)
	defer timeout.Stop()
	var killTimer <-chan time.Time
	var ending Ending
	var status unix.WaitStatus
	mainDone := false

	for !mainDone {
		select {
		case status = <-reaper.main:
			mainDone = true
		case s := <-sigs:
			forward(proc.Pid, s.(syscall.Signal))
		case <-timeout.C:
			ending = Timeout
			t.signal(unix.SIGTERM)
			killTimer = time.After(grace(cfg))
		case <-killTimer:
			t.signal(unix.SIGKILL)
			killTimer = time.After(50 * time.Millisecond)
		}
	}

	// The program is gone: nothing it started may run on.
	t.killUntilEmpty(reaper.done)

	res := Result{Started: true}
	switch {
	case ending == Timeout:
		res.Ending, res.ExitCode = Timeout, ExitTimeout
	case status.Signaled():
		res.Ending, res.Signal, res.ExitCode = Signaled, status.Signal(), 128+int(status.Signal())
	default:
		res.Ending, res.ExitCode = Exited, status.ExitStatus()
	}
	return res
}

func setupFailed(err error) Result {
	return Result{Ending: SetupFailed, ExitCode: ExitSetup, Err: err}
}

// forward passes a signal the supervisor received on to the program. SIGINT
// and SIGQUIT typed at a terminal reach the whole foreground process group,
// the program included: passing them on again would deliver them twice.
func forward(pid int, sig syscall.Signal) {
	if (sig == unix.SIGINT || sig == unix.SIGQUIT) && inForeground() {
		return
	}
	_ = unix.Kill(pid, sig)
}

// inForeground reports whether this process's group is the foreground group
// of the terminal on one of its standard fds.
func inForeground() bool {
	pgrp := unix.Getpgrp()
	for fd := 0; fd < 3; fd++ {
		if fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			return fg == pgrp
		}
	}
	return false
}

// reaper waits for every child of the supervisor: the program, and the
// orphans it leaves, which the subreaper inherits.
type reaper struct {
	pid  int
	main chan unix.WaitStatus // the program's status, once
	done chan struct{}        // closed when no child is left
}

func newReaper(pid int) *reaper {
	return &reaper{pid: pid, main: make(chan unix.WaitStatus, 1), done: make(chan struct{})}
}

func (r *reaper) loop() {
	defer close(r.done)
	for {
		var st unix.WaitStatus
		pid, err := unix.Wait4(-1, &st, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // ECHILD: nothing left
		}
		if pid == r.pid {
			r.main <- st
		}
	}
}

// tree is the sandbox's process tree as seen without a cgroup: the
// supervisor's descendants.
type tree struct{ self int }

func (t *tree) signal(sig unix.Signal) { signalAll(descendants(t.self, nil), sig) }

// killUntilEmpty SIGKILLs the tree until the reaper has no child left.
func (t *tree) killUntilEmpty(done <-chan struct{}) {
	for {
		t.signal(unix.SIGKILL)
		select {
		case <-done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
