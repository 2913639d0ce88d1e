package supervisor

import (
	"errors"
	"fmt"
	"net"
	"os"

	"sandbox-executable/cgroups"
	"sandbox-executable/rlimit"
	"sandbox-executable/spawn"
)

// Ready readies the host for the run pr decided, once, before the runner
// makes the run itself (Recipe): what only Go does, and what a decision
// that can be stored must find done already. The cgroup's parents exist
// and enable the controllers the limits need (cgroups.Ready), a non-root
// user outside a delegated cgroup first getting a transient scope from its
// systemd manager; where no cgroup can be had the limits fall back to
// rlimits if degradation is allowed, or the run is refused (a
// *RefusedError). In Landlock-only mode it makes the run's private temp
// dir and, for the allowlist, the proxy's listener on the host's loopback
// (whose port the program's Landlock rule and environment then name).
// Nothing of the program runs yet; Release undoes what the run did not
// take over.
func (pr *Prepared) Ready() error {
	if err := pr.readyCgroup(); err != nil {
		return err
	}
	if pr.tmpDir != "" && !pr.tmpShared {
		lock, rec, err := makePrivateTmp(pr.tmpDir)
		if err != nil {
			return err
		}
		pr.ownTmp, pr.ownTmpRecord, pr.tmpLock = pr.tmpDir, rec, lock
		pr.notStored = "a private temp dir made for the run (no mount namespace)"
	}
	if pr.net.hostProxy {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		pr.hostListener = l
		port := l.Addr().(*net.TCPAddr).Port
		pr.Landlock = pr.Landlock.WithPort(uint16(port))
		pr.env = proxyEnv(pr.env, l.Addr().String())
		pr.notStored = "the allowlist proxy listens on a port of the host's loopback chosen for the run"
	}
	return nil
}

// HostProxy is the proxy's listener Ready made on the host's loopback, or
// nil.
func (pr *Prepared) HostProxy() net.Listener { return pr.hostListener }

// TmpFD is the private temp dir Ready made, open, or -1.
func (pr *Prepared) TmpFD() int {
	if pr.tmpLock == nil {
		return -1
	}
	return int(pr.tmpLock.Fd())
}

// NotStored says why the run's recipe must not be stored for the warm
// path ("" when it may be): it holds what only this run has.
func (pr *Prepared) NotStored() string { return pr.notStored }

// Release undoes what Ready made that no run took over: the private temp
// dir and its lock, the host proxy's listener. For a run that did not
// start (the runner fell back, or the child failed).
func (pr *Prepared) Release() {
	if pr.hostListener != nil {
		pr.hostListener.Close()
	}
	if pr.ownTmp != "" {
		_ = spawn.RemoveTempDir(pr.ownTmp, int(pr.tmpLock.Fd()), pr.ownTmpRecord)
		pr.tmpLock.Close()
	}
}

// readyCgroup readies the cgroup's parents, or decides what a run without
// a cgroup may do.
func (pr *Prepared) readyCgroup() error {
	c := pr.cgroupPlan
	if c.host == nil {
		return pr.noCgroup(c.why, defaultCgroupFix(nil, false, pr.cfg.Words))
	}
	opt := cgroups.Options{Parent: pr.cfg.CgroupParent, MoveSelf: pr.cfg.MoveSelf}
	dirs, made, err := cgroups.Ready(c.host, c.limits, opt)
	pr.cgroupMade = made
	if len(made) > 0 {
		pr.notStored = "the run's cgroup parent was made for it (--cgroup-parent)"
	}
	if err != nil {
		var un *cgroups.UnavailableError
		if !errors.As(err, &un) {
			return err
		}
		if !pr.cfg.MoveSelf && pr.userScopeApplies(c.host, c.limits) {
			// A scope would take this process in: one that may not
			// move (the resident decider) leaves the run to decide.
			return err
		}
		host, extra := pr.cgroupInUserScope(c.host, c.limits)
		if host == nil {
			why, fix := cgroupWhy(err, c.host, pr.cfg.Words)
			return pr.noCgroup(why+extra, fix)
		}
		if dirs, _, err = cgroups.Ready(host, c.limits, opt); err != nil {
			why, fix := cgroupWhy(err, host, pr.cfg.Words)
			return pr.noCgroup(why+"; the systemd user scope did not help", fix)
		}
		pr.cgroupPlan.host = host
		pr.notStored = "the run's cgroup is in a systemd scope made for this process"
	}
	pr.cgroupDirs, pr.cgroupReady = dirs, true
	return nil
}

// noCgroup decides what a run without a cgroup may do (withoutCgroup,
// as --explain foresees it) and carries out a fall back to per-process
// rlimits.
func (pr *Prepared) noCgroup(why, fix string) error {
	// Decided while the host is known: the cgroups this process is in
	// (EnclosingLimits) are read through it.
	held, degraded, err := pr.withoutCgroup(why, fix)
	pr.cgroupPlan.host = nil
	switch {
	case err != nil:
		return err
	case held != "":
		pr.Enforcement.Cgroup.Why = held
	case degraded != "":
		pr.Degradations = append(pr.Degradations, degraded)
		pr.Enforcement.Cgroup.Why = degraded
		pr.Rlimits = rlimit.For(pr.Plan.Limits, rlimit.Options{NofileCur: pr.nofile.Cur, NofileMax: pr.nofile.Max, TreeFallback: true, Root: os.Getuid() == 0})
	}
	return nil
}
