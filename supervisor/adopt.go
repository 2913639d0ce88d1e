package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/mountns"
	"sandbox-executable/seccomp"
	"sandbox-executable/sockmed"
	"sandbox-executable/spawn"
)

// Adopt goes on with a run that the spawn stage's runner started from
// pr.Recipe() and handed over (h, not a fallback): it takes over the
// runner's cgroup, claims, guardian, caught signals and child, then
// supervises as Run does from the program's start, beginning with what
// made the runner hand over (a notification to answer, the timeout, the
// CPU budget's look, an OOM kill, the tree to end), and cleans up as Run
// does. pr must be the decision the recipe came from. The caller's process
// state is the runner's: it is a child subreaper and catches the signals.
func Adopt(ctx context.Context, pr *Prepared, h *spawn.Handover) Result {
	s := &session{pr: pr, cfg: pr.cfg, ctx: ctx, rulesetFD: -1, proxySock: -1, proxyChild: -1, notifySock: -1}
	s.denials.out = pr.cfg.OnDenial
	s.log().Info("started", "pid", h.Proc.Pid, "program", pr.Argv)
	s.log().Debug("handed over by the runner", "reason", h.Reason.String())
	res := s.adopt(h)
	s.timed("cleanup", func() { s.cleanup(&res) })
	res.Wall = time.Since(h.Started)
	res.Degradations = s.degradations
	res.Rlimits = s.rlimits
	res.Denials = s.denials.counts()
	return res
}

// adopt takes over what the runner made and supervises the program.
func (s *session) adopt(h *spawn.Handover) Result {
	pr := s.pr
	s.env, s.spec, s.view, s.rlimits = pr.env, pr.Landlock, pr.View, pr.Rlimits
	if pr.tmpShared {
		s.tmp = pr.tmpDir
	}
	caught, err := h.Signals(CaughtSignals())
	if err != nil {
		// Nothing can be waited for: end the tree and let the
		// guardian clean up after it.
		h.Abandon()
		return setupFailed(fmt.Errorf("handed over: %w", err))
	}
	s.undo = append(s.undo, caught.Release)
	s.sig = Signals{C: caught.C, Child: caught.Child, Stopped: caught.Stopped}
	if h.CgroupName != "" {
		g, err := cgroups.Attach(pr.cgroupPlan.host, pr.cgroupPlan.limits, cgroups.Options{MoveSelf: s.cfg.MoveSelf}, h.CgroupName)
		if err != nil {
			h.Abandon()
			return setupFailed(fmt.Errorf("handed over: %w", err))
		}
		s.group = g
	}
	if s.view != nil && len(h.ClaimFDs) > 0 {
		_, groups, err := s.view.ClaimPlan()
		var claims *mountns.Claims
		if err == nil {
			claims, err = mountns.AdoptClaims(groups, h.ClaimFDs, h.Locks)
		}
		if err != nil {
			h.Abandon()
			return setupFailed(fmt.Errorf("handed over: %w", err))
		}
		s.claims = claims
		s.undo = append(s.undo, func() { s.timed("release placeholders", claims.Release) })
	}
	s.guardian = h.Guardian
	if pr.sockets.how == socketsMediated {
		s.mediator = sockmed.New(s.mediatorConfig(s.tmp))
	}

	r := running{proc: h.Proc, stops: followStops(h.Proc)}
	if h.Proc.PidFD >= 0 {
		defer unix.Close(h.Proc.PidFD)
	}
	s.term = h.Terminal
	defer s.term.Restore()
	r.reaper = newReaper(h.Proc.Pid)
	go r.reaper.loop(s.sig.Child, s.sig.Stopped)
	r.tree = &tree{self: os.Getpid(), group: s.group, reaped: r.reaper.done}
	if s.view != nil && s.view.Init {
		r.tree.init, r.tree.initFD = h.Proc.Pid, h.Proc.PidFD
	}
	if h.Reason == spawn.HandoverEnded {
		// The runner reaped the child; what it left is ended here.
		s.timed("tree ended", r.tree.end)
		return s.result("", unix.WaitStatus(h.Status))
	}
	if err := s.observeHandedOver(h); err != nil {
		r.tree.kill()
		<-r.reaper.main
		r.tree.end()
		return setupFailed(err)
	}
	ending, status := s.watch(r, nil, h.ProgramStarted, h.Reason == spawn.HandoverCPU)
	s.timed("tree ended", r.tree.end)
	if st, ok := r.proc.Status(); ok {
		status = st
	}
	return s.result(ending, status)
}

// observeHandedOver starts the watcher of the seccomp listener the runner
// received, where the filter has one.
func (s *session) observeHandedOver(h *spawn.Handover) error {
	if !s.pr.Seccomp.NeedsListener() {
		return nil
	}
	if h.ListenerFD < 0 {
		return errors.New("seccomp listener: the child sent none")
	}
	var mediate seccomp.Mediator
	if s.mediator != nil {
		mediate = s.mediator.Mediate
	}
	w, err := seccomp.Watch(h.ListenerFD, s.pr.Seccomp, s.denials.fromSeccomp, mediate)
	if err != nil {
		unix.Close(h.ListenerFD)
		return err
	}
	s.watcher = w
	return nil
}
