// Package doctor answers, for the `sandbox-executable doctor` subcommand,
// what this host can enforce of the helper's strict model, what it cannot,
// and how to close each gap. Every answer comes from the kernel: Landlock and
// seccomp are asked with their own system calls, namespaces are really
// created (in a short-lived child running /bin/true), cgroup permissions are
// checked with faccessat(2) for this process's effective ids. Nothing on the
// host is changed.
package doctor

import (
	"sync"
	"time"

	"sandbox-executable/mountns"
)

// Status is how much of one part of the model this host provides.
type Status string

// Statuses of an Item.
const (
	StatusOK       Status = "ok"       // available as the helper needs it
	StatusDegraded Status = "degraded" // partly available; the helper refuses or narrows without a flag
	StatusMissing  Status = "missing"  // not available
)

// Options tune Check and the Report it returns.
type Options struct {
	// Color makes Text colour the status words with ANSI escapes.
	Color bool
	// ForkTimeout bounds each namespace probe (a fork and exec of
	// /bin/true); 0 means DefaultForkTimeout.
	ForkTimeout time.Duration
}

// DefaultForkTimeout bounds each namespace probe when Options.ForkTimeout is
// zero. The probes run in parallel, so it is also about the longest Check
// waits for them.
const DefaultForkTimeout = 150 * time.Millisecond

// Item is the answer for one part of the model.
type Item struct {
	// ID is a short stable name: landlock, seccomp, cgroups, mountns, netns,
	// userns, privileges.
	ID string `json:"id"`
	// Title says in a few words what the item is about.
	Title string `json:"title"`
	// Status is ok, degraded or missing.
	Status Status `json:"status"`
	// Strict is true for the items the strict model needs; only they decide
	// Report.OK. The others are informational.
	Strict bool `json:"strict"`
	// Detail is what was found, in one line.
	Detail string `json:"detail"`
	// Notes are further facts worth a line each (errata, what a gap costs).
	Notes []string `json:"notes,omitempty"`
	// Fix is a concrete command or setting that closes the gap; empty when
	// the item is ok.
	Fix string `json:"fix,omitempty"`
}

// Report is the answer of Check.
type Report struct {
	// Host are the facts about the machine and this process.
	Host Host `json:"host"`
	// Checks are the items in a fixed order: landlock, seccomp, cgroups,
	// mountns, netns, userns, privileges.
	Checks []Item `json:"checks"`
	// OK is true when every Strict item is ok: Landlock ABI 3 or later,
	// seccomp with KILL_PROCESS and ERRNO, a cgroup with memory and pids
	// limits and CPU accounting that this process can create, and mount and
	// network namespaces.
	OK bool `json:"ok"`

	color bool
}

// Item returns the item with the given ID, and whether there is one.
func (r Report) Item(id string) (Item, bool) {
	for _, it := range r.Checks {
		if it.ID == id {
			return it, true
		}
	}
	return Item{}, false
}

// Check runs every check and returns the report. It forks only for the
// namespace probes, each bounded by Options.ForkTimeout, and takes a few
// milliseconds on a usual host.
func Check(opts Options) Report {
	timeout := opts.ForkTimeout
	if timeout <= 0 {
		timeout = DefaultForkTimeout
	}
	e := liveEnv()
	st := e.status()
	privileged := st.hasCap(capSysAdmin)

	// The forks go first, in parallel; everything else only reads.
	var ns nsProbes
	var wg sync.WaitGroup
	wg.Go(func() { ns = probeNamespaces(privileged, timeout) })

	h := e.host()
	fillHostLive(&h)
	ll := landlockLive(st)
	sc := seccompLive(st)
	cg := cgroupsLive()
	h.LandlockABI = ll.abi
	h.SeccompMode = sc.mode
	h.CgroupMode = cg.mode
	wg.Wait()
	nf := e.nsFacts(ns, st, h)
	nf.helper = mountns.Probe()

	r := Report{Host: h, color: opts.Color}
	r.Checks = []Item{
		landlockItem(ll, h),
		seccompItem(sc),
		cgroupsItem(cg, h),
		mountnsItem(nf),
		netnsItem(nf),
		usernsItem(nf),
		privilegesItem(st, e.capLastCap()),
	}
	r.OK = computeOK(r.Checks)
	return r
}

// computeOK is true when every strict item is ok.
func computeOK(items []Item) bool {
	for _, it := range items {
		if it.Strict && it.Status != StatusOK {
			return false
		}
	}
	return true
}
