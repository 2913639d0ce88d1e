package supervisor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"sandbox-executable/cgroups"
	"sandbox-executable/remedy"
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
		return pr.noCgroup(c.why, defaultCgroupFix(pr.cfg.Words))
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
		host, extra := pr.cgroupInUserScope(c.host, c.limits)
		if host == nil {
			why, fix := cgroupWhy(err, pr.cfg.Words)
			return pr.noCgroup(why+extra, fix)
		}
		if dirs, _, err = cgroups.Ready(host, c.limits, opt); err != nil {
			why, fix := cgroupWhy(err, pr.cfg.Words)
			return pr.noCgroup(why+"; the systemd user scope did not help", fix)
		}
		pr.cgroupPlan.host = host
		pr.notStored = "the run's cgroup is in a systemd scope made for this process"
	}
	pr.cgroupDirs, pr.cgroupReady = dirs, true
	return nil
}

// noCgroup decides what a run without a cgroup may do: nothing needs one,
// or the cgroup the helper is in already holds the limits, or they fall
// back to rlimits where degradation is allowed, or the run is refused.
func (pr *Prepared) noCgroup(why, fix string) error {
	l := pr.Plan.Limits
	pr.cgroupPlan.host = nil
	if l.MemoryBytes == 0 && l.Pids == 0 && l.CPUSeconds == 0 && pr.cfg.CPUQuota == 0 {
		return nil // nothing needs one; the subreaper tracks the tree
	}
	msg := "no cgroup for the memory, pids and CPU limits of the whole tree (" + why + ")"
	// The cgroups this process is already in (a container's own) bound the
	// whole tree too: where they meet every limit asked for, nothing is lost.
	if enc := cgroups.EnclosingLimits(pr.facts.Cgroups); l.CPUSeconds == 0 && pr.cfg.CPUQuota == 0 &&
		(l.MemoryBytes == 0 || (enc.MemoryAt != "" && enc.MemoryBytes <= l.MemoryBytes)) &&
		(l.Pids == 0 || (enc.PidsAt != "" && enc.Pids <= uint64(l.Pids))) {
		var held []string
		if l.MemoryBytes > 0 {
			held = append(held, fmt.Sprintf("memory.max %d in %s", enc.MemoryBytes, enc.MemoryAt))
		}
		if l.Pids > 0 {
			held = append(held, fmt.Sprintf("pids.max %d in %s", enc.Pids, enc.PidsAt))
		}
		pr.Enforcement.Cgroup.Why = "no cgroup of the run's own (" + why + "); the limits are held, at least as tight, by the cgroup the helper is in: " +
			strings.Join(held, ", ") + " (it bounds everything in it, the program included)"
		return nil
	}
	if !pr.cfg.AllowDegraded {
		return &RefusedError{Reason: "refusing to run: " + msg + "; " + fix + ", or pass " + pr.cfg.Words.Say(remedy.AllowDegraded) + " to fall back to per-process rlimits"}
	}
	root := os.Getuid() == 0
	instead := ": per-process RLIMIT_DATA, RLIMIT_NPROC and RLIMIT_CPU instead"
	if root && l.Pids > 0 {
		// The kernel never applies RLIMIT_NPROC to uid 0: naming it as
		// the fallback would be a limit silently gone.
		instead = ": per-process RLIMIT_DATA and RLIMIT_CPU instead; max_pids is not enforced at all (RLIMIT_NPROC does not apply to root)"
	}
	pr.Degradations = append(pr.Degradations, msg+instead)
	pr.Enforcement.Cgroup.Why = msg
	pr.Rlimits = rlimit.For(l, rlimit.Options{NofileCur: pr.nofile.Cur, NofileMax: pr.nofile.Max, TreeFallback: true, Root: root})
	return nil
}

// cgroupDescription names the run's cgroup directories for the debug log.
func cgroupDescription(dirs []cgroups.RecipeDir) string {
	var parts []string
	for _, d := range dirs {
		parts = append(parts, d.Parent)
	}
	return strconv.Itoa(len(dirs)) + " directories under " + strings.Join(parts, ", ")
}
