package supervisor

import (
	"log/slog"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"sandbox-executable/cgroups"
	"sandbox-executable/fsmed"
	"sandbox-executable/policy"
	"sandbox-executable/procfs"
	"sandbox-executable/seccomp"
	"sandbox-executable/sockmed"
	"sandbox-executable/spawn"
)

// ServiceRecord is everything of a decision that Go reads while it serves a
// run the runner carries out (Serve): made with the recipe, by the same
// decision, and stored with it for the warm path, so that a run Go is
// called upon minutes after a stored recipe started it is served from the
// very decision that started it. Nothing in it is decided again.
type ServiceRecord struct {
	Argv []string `json:"argv"`
	// Seccomp says how the seccomp listener's notifications are answered.
	Seccomp ServiceSeccomp `json:"seccomp"`
	// Mediator is the socket mediation's policy, when calls are mediated.
	Mediator *sockmed.Config `json:"mediator,omitempty"`
	// Files is the filesystem mediation's (Landlock-only mode's split
	// directories), when file calls are mediated.
	Files *fsmed.Config `json:"files,omitempty"`
	// Allowlist is the proxy's, in the allowlist network mode.
	Allowlist []policy.HostPort `json:"allowlist,omitempty"`
	// Cgroup names the run's cgroup (whose directories the runner made
	// under a name of its own), for the figures a report reads.
	Cgroup *ServiceCgroup `json:"cgroup,omitempty"`
	// Report asks for the cgroup's figures at the end.
	Report bool `json:"report,omitempty"`
	// PrivateTmp is a private temp dir of the run's own (no mount
	// namespace), removed at the end.
	PrivateTmp string `json:"private_tmp,omitempty"`
	// TmpRecord is its record in the state directory (see recordTmp).
	TmpRecord string `json:"tmp_record,omitempty"`
	// PersistCaches are the scratch caches whose layers the runner hands
	// over at the end, written back after a run that succeeded.
	PersistCaches []string `json:"persist_caches,omitempty"`
	// Audit is how the run's file denials are read and explained, when
	// a denial log or a report will show them.
	Audit *ServiceAudit `json:"audit,omitempty"`
}

// ServiceSeccomp is the part of seccomp.Program its watcher reads.
type ServiceSeccomp struct {
	Notify   bool                 `json:"notify,omitempty"`
	Errnos   map[int32]unix.Errno `json:"errnos,omitempty"`
	Mediated map[int32]bool       `json:"mediated,omitempty"`
}

// ServiceCgroup is the run's cgroup as cgroups.Attach finds it.
type ServiceCgroup struct {
	Host     *cgroups.Host   `json:"host"`
	Limits   cgroups.Limits  `json:"limits"`
	Options  cgroups.Options `json:"options"`
	Explicit string          `json:"explicit,omitempty"`
}

// Service is the record of the service pr's run needs.
func (pr *Prepared) Service() *ServiceRecord {
	rec := &ServiceRecord{Argv: pr.Argv, Report: pr.cfg.Report, PrivateTmp: pr.ownTmp, TmpRecord: pr.ownTmpRecord}
	if v := pr.View; v != nil && v.KeepsLayers {
		rec.PersistCaches = v.ScratchCaches
	}
	if p := pr.Seccomp; p != nil {
		rec.Seccomp = ServiceSeccomp{Notify: p.Notify, Errnos: p.Errnos, Mediated: p.Mediated}
	}
	if pr.sockets.how == socketsMediated {
		c := pr.mediatorConfig()
		rec.Mediator = &c
	}
	rec.Files = pr.files
	rec.Audit = pr.serviceAudit()
	if pr.net.proxy {
		rec.Allowlist = pr.Plan.Network.Allowlist
	}
	if pr.cgroupPlan.host != nil && pr.cgroupReady {
		rec.Cgroup = &ServiceCgroup{Host: pr.cgroupPlan.host, Limits: pr.cgroupPlan.limits,
			Options: cgroups.Options{MoveSelf: pr.cfg.MoveSelf}, Explicit: pr.cfg.CgroupParent}
	}
	return rec
}

// ServeOptions are what the caller of Serve gives it besides the record.
type ServeOptions struct {
	// OnDenial receives every denial the service sees.
	OnDenial func(Denial)
	Log      *slog.Logger
	// HostProxy is the allowlist proxy's listener on the host's loopback
	// (no network namespace), made by Ready; nil otherwise.
	HostProxy net.Listener
	// TmpFD is the record's PrivateTmp, open (the run's lock on it).
	TmpFD int
}

// Serve serves a run the runner carries out (spawn.Service), from rec,
// until the runner says the run ended; it returns how it ended, and the
// caller answers svc.Done once it has reported it. It decides nothing: the
// runner ends the run, Go only answers what the runner asks (the seccomp
// listener's notifications, the proxy) and reads the figures of the end.
func Serve(svc *spawn.Service, rec *ServiceRecord, o ServeOptions) Result {
	log := o.Log
	if log == nil {
		log = discard
	}
	var d denials
	d.out = o.OnDenial
	var watcher *seccomp.Watcher
	var files *fsmed.Mediator
	var proxy *proxyRun
	var audit *auditRun
	if o.HostProxy != nil {
		proxy = startProxy(rec.Allowlist, o.HostProxy, d.record)
	}
	res := Result{Started: true}
	for ev := range svc.Events {
		switch ev {
		case spawn.EventListener:
			var mediate, sockets seccomp.Mediator
			if rec.Mediator != nil {
				c := *rec.Mediator
				self := os.Getpid()
				c.Members = func() []int { return procfs.Descendants(self) }
				c.OnDenial = d.fromSockets
				sockets = sockmed.New(c).Mediate
				mediate = sockets
			}
			if rec.Files != nil {
				c := *rec.Files
				c.OnDenial = d.fromFiles
				files = fsmed.New(c)
				mediate = func(c *seccomp.Call) (int64, unix.Errno) {
					if sockets == nil || fsmed.Handles(c.Nr) {
						return files.Mediate(c)
					}
					return sockets(c)
				}
			}
			prog := &seccomp.Program{Notify: rec.Seccomp.Notify, Errnos: rec.Seccomp.Errnos, Mediated: rec.Seccomp.Mediated}
			w, err := seccomp.Watch(svc.Listener(), prog, d.fromSeccomp, mediate)
			if err != nil {
				log.Error("seccomp listener", "error", err)
				unix.Close(svc.Listener())
				svc.Fail()
				continue
			}
			watcher = w
		case spawn.EventProxy:
			f := os.NewFile(uintptr(svc.ProxyListener()), "proxy-listener")
			l, err := net.FileListener(f)
			f.Close()
			if err != nil {
				log.Error("proxy listener", "error", err)
				svc.Fail()
				continue
			}
			proxy = startProxy(rec.Allowlist, l, d.record)
		case spawn.EventAudit:
			if rec.Audit != nil {
				audit = startAudit(rec.Audit, svc.Audit(), d.record)
			} else if fd := svc.Audit().FD; fd >= 0 {
				unix.Close(fd)
			}
		case spawn.EventEnded:
			if watcher != nil {
				watcher.Stop()
			}
			switch {
			case audit != nil:
				res.Files = audit.finish()
			case rec.Audit != nil:
				res.Files = rec.Audit.notRead()
			}
			if files != nil && files.Err() != nil {
				log.Warn("the file calls of the split directories were left to the kernel", "error", files.Err())
			}
			if proxy != nil {
				st := proxy.stop()
				res.Proxy = &st
			}
			e := svc.Ended()
			res = endedResult(res, e)
			res.Wall = e.Finished.Sub(e.Started)
			res.Denials = d.counts()
			if rec.Report && rec.Cgroup != nil && e.CgroupName != "" {
				opt := rec.Cgroup.Options
				opt.Parent = rec.Cgroup.Explicit
				if g, err := cgroups.Attach(rec.Cgroup.Host, rec.Cgroup.Limits, opt, e.CgroupName); err == nil {
					if st, err := g.Stats(); err == nil {
						res.Cgroup = &CgroupResult{Mode: g.Mode(), Path: g.Path(), Stats: st}
					}
				}
			}
			if rec.PrivateTmp != "" {
				_ = spawn.RemoveTempDir(rec.PrivateTmp, o.TmpFD, rec.TmpRecord)
			}
			writeBack(svc.Layers(), rec.PersistCaches, &res, log)
			log.Info("ended", "ending", string(res.Ending), "exit_code", res.ExitCode, "wall", res.Wall)
			return res
		}
	}
	// The runner is gone without its word: nothing more to serve.
	return Result{Ending: SetupFailed, ExitCode: ExitSetup}
}

// endedResult names the runner's ending of the run.
func endedResult(res Result, e spawn.Ended) Result {
	res.ExitCode = e.ExitCode
	st := e.Status
	switch e.Ending {
	case spawn.EndTimeout:
		res.Ending = Timeout
	case spawn.EndCPU:
		res.Ending = CPUBudget
	case spawn.EndOOM:
		res.Ending, res.Signal = OOM, unix.SIGKILL
	case spawn.EndPids:
		res.Ending = PidsLimitHit
	case spawn.EndService:
		res.Ending = SetupFailed
	case spawn.EndFsize:
		res.Ending, res.Signal = Signaled, unix.SIGXFSZ
	case spawn.EndSignaled:
		res.Ending, res.Signal = Signaled, st.Signal()
	default:
		res.Ending = Exited
	}
	if st.Signaled() && res.Signal == 0 {
		res.Signal = syscall.Signal(st.Signal())
	}
	return res
}
