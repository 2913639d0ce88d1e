package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/landlock"
	"sandbox-executable/mountns"
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

	env := p.Env.Vars
	spec := pr.Landlock
	view := pr.View
	if pr.Enforcement.Filesystem.PrivateTmp {
		dir, err := os.MkdirTemp("", "sandbox-executable-tmp-")
		if err != nil {
			return setupFailed(fmt.Errorf("private temp dir: %w", err))
		}
		defer os.RemoveAll(dir)
		env = withEnv(env, "TMPDIR", dir)
		// A fresh private directory: reading it is as safe as writing it.
		spec = spec.WithRule(landlock.Rule{Path: dir, Access: landlock.ReadWrite, Required: true})
		if view != nil {
			if view, err = mountns.Build(p, mountns.Options{Privileged: view.Privileged, UID: os.Getuid(), GID: os.Getgid(),
				Cwd: cfg.Cwd, ExtraWritable: []string{dir}}); err != nil {
				return setupFailed(err)
			}
		}
	}
	if view != nil {
		claims, err := mountns.ClaimPlaceholders(view.Placeholders)
		if err != nil {
			return setupFailed(err)
		}
		defer claims.Release()
	}

	rulesetFD, err := spec.Build()
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
		Env:           env,
		ShellFallback: true,
		CgroupFD:      -1,
		CgroupProcsFD: -1,
		Pdeathsig:     unix.SIGKILL,
		KeepFDs:       cfg.KeepFDs,
		RulesetFD:     rulesetFD,
		RulesetFlags:  spec.RestrictFlags,
		BPF:           pr.Seccomp.BPF,
	}
	if view != nil {
		req.NamespaceFlags = view.NamespaceFlags
		req.Ops = view.Ops
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

// withEnv returns env with key set to value (replacing any earlier value).
func withEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			continue
		}
		out = append(out, kv)
	}
	return append(out, key+"="+value)
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

// killUntilEmpty SIGKILLs the tree until the reaper has no child left. A
// subreaper with no child has no descendant either (every orphan is
// reparented to it), so an empty tree needs no look at /proc.
func (t *tree) killUntilEmpty(done <-chan struct{}) {
	// The reaper usually sees ECHILD right after the program's status.
	select {
	case <-done:
		return
	case <-time.After(2 * time.Millisecond):
	}
	for {
		t.signal(unix.SIGKILL)
		select {
		case <-done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
