package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/hostfacts"
	"sandbox-executable/landlock"
	"sandbox-executable/mountns"
	"sandbox-executable/netproxy"
	"sandbox-executable/policy"
	"sandbox-executable/remedy"
	"sandbox-executable/rlimit"
	"sandbox-executable/seccomp"
	"sandbox-executable/sockmed"
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
	// ExitCPUBudget is 128+SIGXCPU, what a single process gets from
	// RLIMIT_CPU: the tree's budget ends it the same way.
	ExitCPUBudget = 128 + int(unix.SIGXCPU)
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
	// Cgroup figures, when the run had a cgroup.
	Cgroup *CgroupResult
	// Proxy figures, in the allowlist network mode.
	Proxy *netproxy.Stats
	// Denials counts what the supervisor saw refused.
	Denials DenialCounts
	// Degradations that were decided while setting up (besides Prepare's).
	Degradations []string
	// Rlimits are the limits the program was given, when set up got that
	// far: Prepare's, or the per-process fallbacks of a run without a
	// cgroup.
	Rlimits []rlimit.Limit
}

// CgroupResult is what the run's cgroup saw.
type CgroupResult struct {
	Mode  cgroups.Mode
	Path  string
	Stats cgroups.Stats
}

// forwarded are the signals passed on to the program.
var forwarded = []syscall.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCONT}

// CaughtSignals are the signals the caller of Run catches for it (see
// Signals): the ones passed on to the program, and SIGCHLD.
func CaughtSignals() []syscall.Signal {
	return append(forwarded[:len(forwarded):len(forwarded)], unix.SIGCHLD)
}

// Signals is how the caller hands Run the signals it caught
// (spawn.CatchSignals(CaughtSignals()) gives all three): C, each signal to
// pass on to the program; Child, a value after SIGCHLDs; Stopped, closed
// when the caller stops catching. Signals that arrive while the run is
// set up are passed on once the program runs; a terminating one (SIGTERM,
// SIGINT, SIGHUP, SIGQUIT) keeps it from starting at all.
type Signals struct {
	C       <-chan syscall.Signal
	Child   <-chan struct{}
	Stopped <-chan struct{}
}

// Run builds the kernel objects for pr, starts the program and supervises
// it until it and everything it started are gone. The caller owns the
// process-wide state a run needs: it catches the signals (sig) and makes
// this process a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so that
// no orphan of the sandbox outlives the run unseen; Run refuses to start
// without either. Cancelling ctx ends the run as a timeout does (SIGTERM,
// the grace, SIGKILL), with the program's own ending.
func Run(ctx context.Context, pr *Prepared, sig Signals) Result {
	start := time.Now()
	s := &session{pr: pr, cfg: pr.cfg, ctx: ctx, sig: sig, rulesetFD: -1, proxySock: -1, proxyChild: -1, notifySock: -1}
	s.denials.out = pr.cfg.OnDenial
	res := s.run()
	s.timed("cleanup", func() { s.cleanup(&res) })
	res.Wall = time.Since(start)
	res.Degradations = s.degradations
	res.Rlimits = s.rlimits
	res.Denials = s.denials.counts()
	return res
}

// session is one run's state.
type session struct {
	pr  *Prepared
	cfg Config
	ctx context.Context
	sig Signals

	env       []string
	spec      *landlock.Spec
	view      *mountns.View
	tmp       string // the private temp dir, or "" (a tmpfs where there is a view)
	rlimits   []rlimit.Limit
	rulesetFD int
	group     cgroups.Group
	guardian  *spawn.Guardian
	claims    *mountns.Claims // the placeholders' claims, with a view
	tmpLock   *os.File        // held on it for the run (see makePrivateTmp)
	tmpRecord string          // its record in the state directory
	undo      []func()        // run in reverse by cleanup

	// The allowlist proxy: the socket its listener arrives on from the
	// child (or the host listener, degraded), and the proxy once running.
	proxySock  int
	proxyChild int // the child's end, which it sends the listener over
	hostListen net.Listener
	proxy      *proxyRun

	// With LogDenials or socket mediation: the socket the seccomp
	// listener arrives on, and the watcher answering it.
	notifySock int
	watchFrom  int
	watcher    *seccomp.Watcher
	denials    denials
	// With socket mediation: the mediator.
	mediator *sockmed.Mediator

	degradations []string

	// The caller's terminal as the run found it (terminal.go).
	term *spawn.Terminal
}

// log is the run's logger (silent unless one was given).
func (s *session) log() *slog.Logger {
	if s.cfg.Log != nil {
		return s.cfg.Log
	}
	return discard
}

var discard = slog.New(slog.DiscardHandler)

// timed runs f and logs how long it took, at debug level.
func (s *session) timed(what string, f func()) {
	t := time.Now()
	f()
	s.log().Debug(what, "took", time.Since(t))
}

func (s *session) run() Result {
	s.log().Debug("prepared", "fs_mode", s.pr.Enforcement.Filesystem.Mode, "network", string(s.pr.Plan.Network.Mode),
		"landlock_abi", s.pr.Enforcement.Landlock.ABI, "seccomp_rules", s.pr.Enforcement.Seccomp.Rules)
	var err error
	s.timed("setup", func() { err = s.setup() })
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return Result{Ending: Refused, ExitCode: ExitSetup, Err: err}
		}
		return setupFailed(err)
	}
	return s.supervise()
}

// setup makes every kernel object and host-side artifact of the run.
func (s *session) setup() error {
	p := s.pr.Plan
	s.env = s.pr.env
	s.spec = s.pr.Landlock
	s.view = s.pr.View
	s.rlimits = s.pr.Rlimits

	if err := createRoots(p); err != nil {
		return err
	}
	if dir := s.pr.tmpDir; dir != "" && s.pr.tmpShared {
		if err := makeSharedTmp(dir); err != nil {
			return err
		}
		s.tmp = dir
	} else if dir != "" {
		lock, rec, err := makePrivateTmp(dir)
		if err != nil {
			return err
		}
		s.tmp, s.tmpLock, s.tmpRecord = dir, lock, rec
		s.undo = append(s.undo, func() {
			if os.RemoveAll(dir) == nil {
				_ = unix.Unlink(rec)
			}
			lock.Close()
		})
	}
	switch {
	case s.pr.net.proxy && s.pr.net.hostProxy:
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		s.hostListen = l
		s.undo = append(s.undo, func() { l.Close() })
		port := l.Addr().(*net.TCPAddr).Port
		s.spec = s.spec.WithPort(uint16(port))
		s.env = proxyEnv(s.env, l.Addr().String())
	case s.pr.net.proxy:
		parent, child, err := unixPair()
		if err != nil {
			return err
		}
		s.proxySock, s.proxyChild = parent, child
		s.undo = append(s.undo, func() { unix.Close(parent); unix.Close(child) })
	}
	// The cgroup is made while the placeholders are claimed: both are
	// mostly waits on a filesystem (mkdir in cgroupfs, in the
	// workspace), which overlap instead of adding up. Neither touches
	// what the other sets.
	cgroupMade := make(chan error, 1)
	go func() {
		var err error
		s.timed("cgroup", func() { err = s.makeCgroup() })
		cgroupMade <- err
	}()
	if err := s.claimPlaceholders(); err != nil {
		<-cgroupMade
		return err
	}
	if err := <-cgroupMade; err != nil {
		return err
	}
	if err := s.startGuardian(); err != nil {
		return err
	}
	if s.pr.Seccomp.NeedsListener() {
		parent, child, err := unixPair()
		if err != nil {
			return err
		}
		s.notifySock = child
		s.undo = append(s.undo, func() { unix.Close(parent); unix.Close(child) })
		s.watchFrom = parent
	}
	if s.pr.sockets.how == socketsMediated {
		s.mediator = sockmed.New(s.mediatorConfig(s.tmp))
	}
	fd, err := s.spec.Build()
	if err != nil {
		return err
	}
	s.rulesetFD = fd
	if fd >= 0 {
		s.undo = append(s.undo, func() { unix.Close(fd) })
	}
	return nil
}

// claimPlaceholders claims the view's placeholders, which are decided again
// under their claims and held until the program's whole tree is gone:
// another run may have made or removed one since Prepare looked.
func (s *session) claimPlaceholders() error {
	if s.view == nil {
		return nil
	}
	var claims *mountns.Claims
	var err error
	v := s.view
	s.timed("claim placeholders", func() { v, claims, err = mountns.Claim(v) })
	if err != nil {
		return err
	}
	s.view, s.claims = v, claims
	s.undo = append(s.undo, func() { s.timed("release placeholders", claims.Release) })
	if fs := &s.pr.Enforcement.Filesystem; s.pr.fs.Mode == FSExact {
		fs.Masked, fs.ReadOnly, fs.Placeholders, fs.Narrowed = v.Masked, v.ReadOnly, v.Placeholders, v.Narrowed
	}
	return nil
}

// makeCgroup gives the run its cgroup. Without one, the limits that need it
// fall back to rlimits only where degradation was allowed.
func (s *session) makeCgroup() error {
	c := s.pr.cgroupPlan
	if c.host == nil {
		return s.noCgroup(c.why, defaultCgroupFix(s.cfg.Words))
	}
	g, err := cgroups.New(c.host, c.limits, cgroups.Options{Parent: s.cfg.CgroupParent, MoveSelf: s.cfg.MoveSelf})
	if err != nil {
		var un *cgroups.UnavailableError
		if !errors.As(err, &un) {
			return err
		}
		var extra string
		if g, extra = s.cgroupInUserScope(c.host, c.limits); g == nil {
			why, fix := cgroupWhy(err, s.cfg.Words)
			return s.noCgroup(why+extra, fix)
		}
	}
	s.group = g
	s.log().Debug("cgroup", "mode", string(g.Mode()), "path", g.Path())
	return nil
}

// startGuardian starts the guardian that cleans up should the supervisor be
// killed, whenever there is something to clean: the cgroup, the
// placeholders' claims, the private temp dir.
func (s *session) startGuardian() error {
	var spec spawn.GuardianSpec
	if s.group != nil {
		cl := s.group.Cleanup()
		spec.KillFile, spec.Procs, spec.CgroupDirs = cl.KillFile, cl.ProcsFiles, cl.Dirs
	}
	spec.Locks = s.claims.Guarded()
	if s.tmpLock != nil {
		spec.EmptyDirs = []spawn.EmptyDir{{Path: s.tmp, Record: s.tmpRecord}}
		spec.KeepFDs = []int{int(s.tmpLock.Fd())}
	}
	if s.group == nil && len(spec.Locks) == 0 && len(spec.EmptyDirs) == 0 {
		return nil
	}
	spec.SweepRequest = stateFile(sweepWanted)
	gd, err := spawn.StartGuardian(spec)
	if err != nil {
		return err
	}
	s.guardian = gd
	return nil
}

// noCgroup decides what a run without a cgroup may do.
func (s *session) noCgroup(why, fix string) error {
	l := s.pr.Plan.Limits
	if l.MemoryBytes == 0 && l.Pids == 0 && l.CPUSeconds == 0 && s.cfg.CPUQuota == 0 {
		return nil // nothing needs one; the subreaper tracks the tree
	}
	msg := "no cgroup for the memory, pids and CPU limits of the whole tree (" + why + ")"
	// The cgroups this process is already in (a container's own) bound the
	// whole tree too: where they meet every limit asked for, nothing is lost.
	if enc := cgroups.EnclosingLimits(s.pr.cgroupPlan.host); l.CPUSeconds == 0 && s.cfg.CPUQuota == 0 &&
		(l.MemoryBytes == 0 || (enc.MemoryAt != "" && enc.MemoryBytes <= l.MemoryBytes)) &&
		(l.Pids == 0 || (enc.PidsAt != "" && enc.Pids <= uint64(l.Pids))) {
		var held []string
		if l.MemoryBytes > 0 {
			held = append(held, fmt.Sprintf("memory.max %d in %s", enc.MemoryBytes, enc.MemoryAt))
		}
		if l.Pids > 0 {
			held = append(held, fmt.Sprintf("pids.max %d in %s", enc.Pids, enc.PidsAt))
		}
		s.pr.Enforcement.Cgroup.Why = "no cgroup of the run's own (" + why + "); the limits are held, at least as tight, by the cgroup the helper is in: " +
			strings.Join(held, ", ") + " (it bounds everything in it, the program included)"
		s.log().Info("limits held by the enclosing cgroup", "memory_max", enc.MemoryBytes, "pids_max", enc.Pids)
		return nil
	}
	if !s.cfg.AllowDegraded {
		return &RefusedError{Reason: "refusing to run: " + msg + "; " + fix + ", or pass " + s.cfg.Words.Say(remedy.AllowDegraded) + " to fall back to per-process rlimits"}
	}
	root := os.Getuid() == 0
	instead := ": per-process RLIMIT_DATA, RLIMIT_NPROC and RLIMIT_CPU instead"
	if root && l.Pids > 0 {
		// The kernel never applies RLIMIT_NPROC to uid 0: naming it as
		// the fallback would be a limit silently gone.
		instead = ": per-process RLIMIT_DATA and RLIMIT_CPU instead; max_pids is not enforced at all (RLIMIT_NPROC does not apply to root)"
	}
	s.degradations = append(s.degradations, msg+instead)
	if s.cfg.Warn != nil {
		s.cfg.Warn(s.degradations[len(s.degradations)-1])
	}
	s.rlimits = rlimit.For(s.pr.Plan.Limits, rlimit.Options{NofileCur: s.pr.nofile.Cur, NofileMax: s.pr.nofile.Max, TreeFallback: true, Root: root})
	return nil
}

// observe starts what watches the running program: the proxy, and the
// seccomp listener's watcher.
func (s *session) observe() error {
	if s.notifySock >= 0 {
		fd, err := spawn.ReceiveFD(s.watchFrom)
		if err != nil {
			return fmt.Errorf("seccomp listener: %w", err)
		}
		var mediate seccomp.Mediator
		if s.mediator != nil {
			mediate = s.mediator.Mediate
		}
		if s.watcher, err = seccomp.Watch(fd, s.pr.Seccomp, s.denials.fromSeccomp, mediate); err != nil {
			unix.Close(fd)
			return err
		}
	}
	return s.serveProxy()
}

// serveProxy starts the allowlist proxy on the listener the child made in
// its namespace (before it execed) or on the host's.
func (s *session) serveProxy() error {
	l := s.hostListen
	if s.proxySock >= 0 {
		var err error
		if l, err = receiveListener(s.proxySock); err != nil {
			return err
		}
	}
	if l != nil {
		s.proxy = startProxy(s.pr.Plan, l, s.denials.record)
	}
	return nil
}

// cleanup undoes setup, in reverse, after the tree is gone.
func (s *session) cleanup(res *Result) {
	if s.watcher != nil {
		s.watcher.Stop()
	}
	if s.proxy != nil {
		st := s.proxy.stop()
		if res != nil {
			res.Proxy = &st
		}
	}
	if s.group != nil {
		// The figures only for a report: reading them is most of an
		// unreported run's teardown.
		if res != nil && s.cfg.Report {
			if st, err := s.group.Stats(); err == nil {
				res.Cgroup = &CgroupResult{Mode: s.group.Mode(), Path: s.group.Path(), Stats: st}
			}
		}
	}
	// The cgroup's directories go while the rest is undone: each rmdir
	// waits on its own filesystem (the cgroup's, the workspace's for the
	// placeholders), so the two overlap instead of adding up.
	removed := make(chan error, 1)
	if g := s.group; g != nil {
		go func() { removed <- g.Remove() }()
	} else {
		removed <- nil
	}
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
	if err := <-removed; err != nil {
		// The guardian was not released: it takes over.
		s.guardian = nil
	}
	// Last: should the supervisor be killed while it cleans up, the
	// guardian finishes (what is removed already it finds gone).
	if s.guardian != nil {
		s.guardian.Release()
	}
}

// supervise starts the program and waits until it and its tree are gone.
func (s *session) supervise() Result {
	early, refused := s.callerReady()
	if refused != nil {
		return *refused
	}
	// The terminal the program may change while it runs goes back as it
	// was once the tree is gone.
	s.term = spawn.SaveTerminal()
	defer s.term.Restore()
	req := s.request()
	r, failed := s.start(req)
	if failed != nil {
		return *failed
	}
	if r.proc.PidFD >= 0 {
		defer unix.Close(r.proc.PidFD)
	}
	// Groups of supervisors that died with their guardians (a reboot
	// does not count: cgroups do not survive it), and the placeholders and
	// temp dirs of such runs, are swept while the program runs, off its
	// start-up path: now and then, or when a guardian had to clean up.
	go sweepStale(s.pr.cgroupPlan.host)()

	ending, status := s.watch(r, early, time.Now(), false)
	// The program is gone: nothing it started may run on.
	s.timed("tree ended", r.tree.end)
	if st, ok := r.proc.Status(); ok {
		status = st // the init's program: its own status, not the init's
	}
	return s.result(ending, status)
}

// callerReady checks what Run asks of its caller and drains the signals
// that came while the run was set up: a terminating one keeps the program
// from starting (the Result says so); the others are passed on once it
// runs.
func (s *session) callerReady() (early []syscall.Signal, refused *Result) {
	// The caller catches the signals (SIGCHLD among them: the reaper waits
	// for it instead of blocking a thread in wait4) and makes this process
	// a child subreaper, so that orphans of the sandbox become its
	// children and none outlives the run unseen.
	if s.sig.C == nil || s.sig.Child == nil || s.sig.Stopped == nil {
		r := setupFailed(errors.New("supervisor: Run needs the caller's caught signals (Signals.C, Child and Stopped)"))
		return nil, &r
	}
	var reaping uintptr
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&reaping)), 0, 0, 0); err != nil || reaping == 0 {
		r := setupFailed(errors.New("supervisor: the caller must make this process a child subreaper (prctl PR_SET_CHILD_SUBREAPER) before Run"))
		return nil, &r
	}
	for {
		select {
		case sg := <-s.sig.C:
			switch sg {
			case unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT:
				s.log().Info("signal before the start: not started", "signal", sg.String())
				return nil, &Result{Ending: Signaled, Signal: sg, ExitCode: 128 + int(sg)}
			}
			early = append(early, sg)
		default:
			return early, nil
		}
	}
}

// request is what the child stage is to carry out: the program, its
// environment and descriptors, its cgroup, namespaces and mounts, its
// Landlock ruleset, seccomp filter and rlimits.
func (s *session) request() *spawn.Request {
	req := &spawn.Request{
		Paths:         s.pr.Candidates,
		Argv:          s.pr.Argv,
		Env:           s.env,
		ShellFallback: true,
		CgroupFD:      -1,
		Pdeathsig:     unix.SIGKILL,
		KeepFDs:       s.cfg.KeepFDs,
		// Whatever the caller had, the program has none.
		DropCapabilities: true,
		RulesetFD:        s.rulesetFD,
		NotifySock:       s.notifySock,
		// A mediated call must not be carried out twice.
		NotifyKillable: s.mediator != nil,
		RulesetFlags:   s.spec.RestrictFlags,
		BPF:            s.pr.Seccomp.BPF,
		Guardian:       s.guardian,
	}
	if s.group != nil {
		req.CgroupFD = s.group.CloneIntoFD()
		if req.CgroupFD >= 0 {
			// Path is the v2 directory CloneIntoFD opened.
			req.CgroupProcs = s.group.Path() + "/cgroup.procs"
		}
		req.JoinFDs = s.group.JoinFDs()
	}
	if s.view != nil {
		req.NamespaceFlags = s.view.NamespaceFlags
		req.UnshareFlags = s.view.UnshareFlags
		req.Init = s.view.Init
		req.Ops = append(slices.Clip(s.view.Ops), s.pr.freshRules...)
		req.ProxySock = s.proxyChild
		if tty, linked, ok := s.term.Foreground(); ok && req.Init {
			req.TakeForeground, req.TTY, req.Linked = true, tty, linked
		}
	}
	for _, l := range s.rlimits {
		req.Rlimits = append(req.Rlimits, spawn.Rlimit{Resource: l.Resource, Cur: l.Cur, Max: l.Max})
	}
	return req
}

// running is a started program: its process, the reaper of this process's
// children and the tree to end.
type running struct {
	proc   *spawn.Process
	reaper *reaper
	tree   *tree
	stops  <-chan syscall.Signal // the program's stops to follow (followStops), or nil
}

// start starts the child and, once its program runs, what observes it;
// failed is the Result of a child that exited before its program ran, or
// of an observer that could not start (the program is then ended).
func (s *session) start(req *spawn.Request) (r running, failed *Result) {
	var err error
	s.timed("spawn", func() { r.proc, err = spawn.Start(req) })
	if r.proc == nil {
		res := setupFailed(err)
		return r, &res
	}
	s.log().Info("started", "pid", r.proc.Pid, "program", s.pr.Argv)
	if err == nil {
		s.term.Started()
		r.stops = followStops(r.proc)
	}
	r.reaper = newReaper(r.proc.Pid)
	go r.reaper.loop(s.sig.Child, s.sig.Stopped)
	r.tree = &tree{self: os.Getpid(), group: s.group, reaped: r.reaper.done}
	if req.Init {
		r.tree.init, r.tree.initFD = r.proc.Pid, r.proc.PidFD
	}
	if err == nil {
		if err = s.observe(); err != nil {
			// The program runs without its proxy or its observer: end it.
			r.tree.kill()
		}
	}
	if err == nil {
		return r, nil
	}
	// The child exited before its program ran, or its proxy failed.
	<-r.reaper.main
	r.tree.end()
	if r.proc.PidFD >= 0 {
		unix.Close(r.proc.PidFD)
	}
	res := setupFailed(err)
	var se *spawn.Error
	if errors.As(err, &se) {
		if se.Step == spawn.StepExec {
			err = execError(s.pr.Argv[0], s.env, se)
		}
		res = Result{Ending: SetupFailed, ExitCode: se.ExitCode(), Err: err}
	}
	return r, &res
}

// watch waits for the program's end, passing signals on and ending the
// tree on a timeout (counted from started), a spent CPU budget (looked at
// at once with cpuNow), an OOM kill or the caller's cancel; it returns how
// the run ended (by the supervisor's hand, or "" for the program's own
// end) and the program's wait status.
func (s *session) watch(r running, early []syscall.Signal, started time.Time, cpuNow bool) (Ending, unix.WaitStatus) {
	p, t, pid := s.pr.Plan, r.tree, r.proc.Pid
	timeout := time.NewTimer(time.Until(started.Add(time.Duration(p.Limits.TimeoutSeconds) * time.Second)))
	defer timeout.Stop()
	budget := newCPUWatch(s.group, p.Limits.CPUSeconds, cpuNow)
	// The first OOM kill ends the whole tree, on every cgroup layout: a v1
	// memory controller kills one process, and a shell that waits for it
	// would run on (v2 kills the group itself: memory.oom.group).
	var oomKilled <-chan struct{}
	if s.group != nil && p.Limits.MemoryBytes > 0 {
		var err error
		if oomKilled, err = s.group.OOMKilled(); err != nil {
			s.log().Warn("no OOM watch", "error", err)
		}
	}
	var killTimer <-chan time.Time
	var ending Ending
	for _, sg := range early {
		s.log().Info("signal", "signal", sg.String(), "forwarded", s.forward(pid, sg))
	}
	canceled := s.ctx.Done()
	stops := r.stops
	for {
		select {
		case status := <-r.reaper.main:
			return ending, status
		case sig := <-s.sig.C:
			s.log().Info("signal", "signal", sig.String(), "forwarded", s.forward(pid, sig))
		case sig, ok := <-stops:
			if !ok {
				stops = nil
			} else if s.term.FollowStop(sig) {
				s.log().Info("followed the program's stop", "signal", sig.String())
			}
		case <-timeout.C:
			if ending == "" {
				s.log().Warn("timeout", "seconds", p.Limits.TimeoutSeconds)
				ending = Timeout
				t.signal(unix.SIGTERM)
				killTimer = time.After(grace(s.cfg))
			}
		case <-budget.tick():
			if budget.spent() && ending == "" {
				s.log().Warn("cpu budget spent", "used", budget.used, "budget", budget.budget)
				ending = CPUBudget
				t.signal(unix.SIGXCPU)
				killTimer = time.After(time.Second)
			}
		case <-oomKilled:
			oomKilled = nil
			if ending == "" {
				s.log().Warn("out of memory: ending the tree")
				ending = OOM
				t.kill()
			}
		case <-canceled:
			canceled = nil
			if ending == "" && killTimer == nil {
				s.log().Warn("canceled by the caller")
				t.signal(unix.SIGTERM)
				killTimer = time.After(grace(s.cfg))
			}
		case <-killTimer:
			t.kill()
			killTimer = time.After(50 * time.Millisecond)
		}
	}
}

// result is the run's Result from how it ended and the program's status.
func (s *session) result(ending Ending, status unix.WaitStatus) Result {
	res := Result{Started: true}
	switch {
	case ending == Timeout:
		res.Ending, res.ExitCode = Timeout, ExitTimeout
	case ending == CPUBudget:
		res.Ending, res.ExitCode = CPUBudget, ExitCPUBudget
	case ending == OOM:
		res.Ending, res.Signal, res.ExitCode = OOM, unix.SIGKILL, 128+int(unix.SIGKILL)
	case status.Signaled():
		res.Ending, res.Signal, res.ExitCode = Signaled, status.Signal(), 128+int(status.Signal())
	default:
		res.Ending, res.ExitCode = Exited, status.ExitStatus()
	}
	// Only a failed ending can be an OOM kill (SIGKILL) or a fork the pids
	// limit refused (a status other than 0): a run that succeeded reads no
	// figures here.
	if s.group != nil && (res.Ending == Signaled || res.Ending == Exited) && res.ExitCode != 0 {
		if st, err := s.group.Stats(); err == nil {
			switch {
			case st.OOMKills > 0 && res.Signal == unix.SIGKILL:
				res.Ending = OOM
			case st.PidsLimitHits > 0 && res.ExitCode != 0:
				res.Ending = PidsLimitHit
			}
		}
	}
	return res
}

func setupFailed(err error) Result {
	return Result{Ending: SetupFailed, ExitCode: ExitSetup, Err: err}
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

// createRoots makes the writable roots that do not exist yet (one
// directory each, below a parent that exists), with the caller's umask;
// they stay after the run. One that appeared in the meantime must be a
// directory, not a link.
func createRoots(p *policy.Plan) error {
	for _, r := range p.Filesystem.WritableRoots {
		if !r.Create {
			continue
		}
		if err := os.Mkdir(r.Path, 0o777); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("writable root %s: %w", r.Path, err)
		}
		if st, err := os.Lstat(r.Path); err != nil || !st.IsDir() {
			return fmt.Errorf("writable root %s: not a directory after it was created", r.Path)
		}
	}
	return nil
}

// makePrivateTmp creates the program's private temp dir dir (named by
// Prepare, in a canonical parent: Landlock opens a rule's path without
// following any symlink, and $TMPDIR may name one), takes the flock on it
// that says it is in use for the run, and records it for the stale sweep
// (see stale.go). The record is made once it is locked: a recorded
// directory that is unlocked is stale.
func makePrivateTmp(dir string) (lock *os.File, record string, err error) {
	// Made here, never found: an entry of that name already there (planted,
	// or a link) fails the run.
	if err = os.Mkdir(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("private temp dir: %w", err)
	}
	if lock, err = os.Open(dir); err == nil {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_SH); err == nil {
			if record, err = recordTmp(dir); err == nil {
				return lock, record, nil
			}
		}
		lock.Close()
	}
	os.Remove(dir)
	return nil, "", fmt.Errorf("private temp dir: %w", err)
}

// makeSharedTmp makes the shared mount point of the user's private temp
// dirs where it is not there yet, and checks the one that is: Prepare
// chose it from what the host facts saw, and it may have changed since.
func makeSharedTmp(dir string) error {
	if err := os.Mkdir(dir, 0o700); err == nil {
		// Its mode exactly, whatever the umask took away.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("private temp dir: %w", err)
		}
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("private temp dir: %w", err)
	}
	if err := hostfacts.CheckSharedTmpNow(dir, os.Geteuid(), false); err != nil {
		return fmt.Errorf("private temp dir: %w", err)
	}
	return nil
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

// loop reaps whatever has exited each time child says a SIGCHLD came, and
// once stopped (the signals are no longer caught) in blocking waits: no
// thread sits in wait4 while the program runs.
func (r *reaper) loop(child, stopped <-chan struct{}) {
	defer close(r.done)
	flags := unix.WNOHANG
	for {
		var st unix.WaitStatus
		// Without __WALL: the guardian, a "clone" child with no exit
		// signal, is never waited for (spawn.Guardian); every process of
		// the tree is an ordinary child (reparented orphans get SIGCHLD).
		pid, err := unix.Wait4(-1, &st, flags, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // ECHILD: nothing left
		}
		if pid == 0 {
			// Children left, none exited: until the next SIGCHLD.
			select {
			case <-child:
			case <-stopped:
				flags = 0
			}
			continue
		}
		if pid == r.pid {
			r.main <- st
		}
	}
}

// tree is the sandbox's process tree: the supervisor's descendants (as a
// child subreaper it inherits every orphan), all in its cgroup where it has
// one. With a PID namespace, its init is the one child, and the rest of the
// tree dies with it.
type tree struct {
	self   int
	group  cgroups.Group
	reaped <-chan struct{} // closed when the supervisor has no child left
	init   int             // the PID namespace's init, or 0
	initFD int             // its pidfd, opened at its start, or -1
}

// signal sends sig to every process of the tree but the init, which would
// pass it on to the program a second time.
func (t *tree) signal(sig unix.Signal) { signalAll(t.members(), sig) }

// members are the tree's processes but the init.
func (t *tree) members() []int {
	pids := descendants(t.self)
	if t.init != 0 {
		pids = slices.DeleteFunc(pids, func(p int) bool { return p == t.init })
	}
	return pids
}

// kill SIGKILLs the whole tree: through the init's pidfd first (its end
// ends the namespace), which needs no file to be opened, so no limit the
// program set on the supervisor can stop it.
func (t *tree) kill() {
	if t.init != 0 && t.initFD >= 0 {
		_ = unix.PidfdSendSignal(t.initFD, unix.SIGKILL, nil, 0)
	}
	_ = cgroups.KillTree(t.group, t.members)
}

// end kills whatever is left of the tree and returns once it is gone: the
// supervisor, a child subreaper, inherits every orphan of the tree, so the
// tree is gone exactly when it has no child left to reap (the guardian is
// not waited for: spawn.Guardian). Checking the cgroup alone is not enough: a killed process
// leaves the cgroup before it is fully gone. An empty tree needs no look at
// /proc.
func (t *tree) end() {
	select {
	case <-t.reaped:
		return
	case <-time.After(2 * time.Millisecond):
	}
	for {
		t.kill()
		select {
		case <-t.reaped:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// cpuWatch ends the run when the tree has used its CPU budget, checking the
// cgroup's usage more often as the budget runs out.
type cpuWatch struct {
	group  cgroups.Group
	budget time.Duration
	next   *time.Timer
	used   time.Duration
}

func newCPUWatch(g cgroups.Group, seconds uint64, now bool) *cpuWatch {
	w := &cpuWatch{group: g, budget: time.Duration(seconds) * time.Second}
	if g != nil && seconds > 0 {
		first := w.interval()
		if now {
			first = 0
		}
		w.next = time.NewTimer(first)
	}
	return w
}

// tick fires when the usage should be read again; never without a budget.
func (w *cpuWatch) tick() <-chan time.Time {
	if w.next == nil {
		return nil
	}
	return w.next.C
}

// spent reads the usage and re-arms the timer.
func (w *cpuWatch) spent() bool {
	if st, err := w.group.Stats(); err == nil {
		w.used = st.CPUUsage
	}
	if w.used >= w.budget {
		return true
	}
	w.next.Reset(w.interval())
	return false
}

// interval is what is left of the budget over twice the CPUs (a tree
// running on every CPU spends at most half of it before the next look),
// between 20 ms and 1 s.
func (w *cpuWatch) interval() time.Duration {
	d := (w.budget - w.used) / time.Duration(2*runtime.NumCPU())
	return min(max(d, 20*time.Millisecond), time.Second)
}
