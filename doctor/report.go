// Package doctor answers, for the `sandbox-executable doctor` subcommand,
// what this host can enforce of the helper's strict model, what it cannot,
// and how to close each gap. It only renders: every answer comes from the
// facts hostfacts.Probe found (with Options.Doctor), the same probe a run
// decides from. There Landlock and seccomp are asked with their own system
// calls, namespaces are really created (in a short-lived child), cgroup
// permissions are checked with faccessat(2) for the effective ids, and the
// user's systemd manager is asked about itself. Nothing on the host is
// changed.
package doctor

import (
	"sandbox-executable/cgroups"
	"sandbox-executable/hostfacts"
	"sandbox-executable/remedy"
)

// Status is how much of one part of the model this host provides.
type Status string

// Statuses of an Item.
const (
	StatusOK       Status = "ok"       // available as the helper needs it
	StatusDegraded Status = "degraded" // partly available; the helper refuses or narrows without a flag
	StatusMissing  Status = "missing"  // not available
)

// Options tune the Report Render returns.
type Options struct {
	// Color makes Text colour the status words with ANSI escapes.
	Color bool
	// Words renders the remedies the advice names (the CLI: its flags and
	// launcher); nil says them in plain words.
	Words remedy.Words
}

// ProbeOptions are the hostfacts options whose Facts Render wants: the
// doctor's facts too, and nothing written (the state directory is looked
// up, not made).
func ProbeOptions() hostfacts.Options { return hostfacts.Options{ReadOnly: true, Doctor: true} }

// Item is the answer for one part of the model.
type Item struct {
	// ID is a short stable name: landlock, seccomp, cgroups, mountns, netns,
	// userns, privileges, state.
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
	// mountns, netns, userns, privileges, state.
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

// Render makes the report from f, which hostfacts.Probe found with
// ProbeOptions; it looks at nothing itself. Facts without their Doctor part
// render as a host about which nothing further is known.
func Render(f *hostfacts.Facts, opts Options) Report {
	d := f.Doctor
	if d == nil {
		d = &hostfacts.Diagnosis{CapLastCap: -1, Status: hostfacts.ProcStatus{NoNewPrivs: -1, Seccomp: -1, SeccompFilters: -1}}
	}
	h := hostOf(f, d)
	nf := nsFactsOf(f, d, h)
	r := Report{Host: h, color: opts.Color}
	r.Checks = []Item{
		landlockItem(landlockFactsOf(f, d), h),
		seccompItem(seccompFactsOf(d)),
		cgroupsItem(cgroupFactsOf(f, d), h, opts.Words),
		mountnsItem(nf),
		netnsItem(nf),
		usernsItem(nf),
		privilegesItem(d.Status, d.CapLastCap),
		stateItem(f, d),
	}
	r.OK = computeOK(r.Checks)
	return r
}

// hostOf is the Host part of the report.
func hostOf(f *hostfacts.Facts, d *hostfacts.Diagnosis) Host {
	s := d.System
	h := Host{Kernel: s.Kernel, Arch: s.Arch, GoArch: s.GoArch, UID: f.UID, EUID: f.EUID, Container: s.Container, WSL: s.WSL,
		Systemd: s.Systemd, RootFS: s.RootFS, LSMs: s.LSMs, BootLSM: s.BootLSM}
	h.LandlockABI = f.LandlockABI
	h.SeccompMode = d.Seccomp.Mode
	h.CgroupMode = string(cgroups.Unavailable)
	if f.Cgroups != nil {
		h.CgroupMode = string(f.Cgroups.Mode)
	}
	return h
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
