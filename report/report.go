// Package report is the result report: one JSON document, written when a run
// ends, that says how it ended, what it used and what was actually enforced,
// for people and programs alike. Its JSON Schema is schema.json beside this
// file; the integration tests validate real reports against it.
package report

import (
	"encoding/json"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/supervisor"
)

// Version is the report format's version; it changes when a field changes
// meaning or goes away (new fields may appear without it).
const Version = 1

// Report is the document.
type Report struct {
	Version     int       `json:"version"`
	Tool        string    `json:"tool"`
	ToolVersion string    `json:"tool_version"`
	StartedAt   time.Time `json:"started_at"`
	Program     []string  `json:"program"`

	Ending   string `json:"ending"`
	ExitCode int    `json:"exit_code"`
	// Signal names the signal that ended the program ("SIGKILL"), or null.
	Signal *string `json:"signal"`
	// Error is the refusal or setup failure, or null.
	Error       *string `json:"error"`
	Started     bool    `json:"started"`
	WallSeconds float64 `json:"wall_seconds"`

	// Usage of the whole tree, from its cgroup; null where unknown.
	CPU             *CPU    `json:"cpu"`
	MemoryPeakBytes *uint64 `json:"memory_peak_bytes"`
	PidsPeak        *uint64 `json:"pids_peak"`
	OOMKills        uint64  `json:"oom_kills"`
	PidsLimitHits   uint64  `json:"pids_limit_hits"`

	// Enforcement is what was decided and applied on this host; null when
	// the run was refused before it could be decided.
	Enforcement *Enforcement `json:"enforcement"`
	Cgroup      *Cgroup      `json:"cgroup"`
	Rlimits     []Rlimit     `json:"rlimits"`
	Network     *Network     `json:"network"`
	// Degradations lists what was not enforced, each with its reason.
	Degradations []string `json:"degradations"`
	Denials      Denials  `json:"denials"`
	// WriteBack says what --persist-cache wrote back to each scratch
	// cache.
	WriteBack []string `json:"write_back,omitempty"`
}

// CPU is CPU time, in seconds.
type CPU struct {
	UserSeconds   float64 `json:"user_seconds"`
	SystemSeconds float64 `json:"system_seconds"`
	TotalSeconds  float64 `json:"total_seconds"`
}

// Cgroup is where the run's cgroup was.
type Cgroup struct {
	Mode string `json:"mode"`
	Path string `json:"path"`
}

// Network is what the allowlist proxy saw.
type Network struct {
	Allowed uint64 `json:"allowed"`
	Refused uint64 `json:"refused"`
	Failed  uint64 `json:"failed"`
}

// Denials counts the refusals the supervisor saw, and Landlock's, which
// the kernel records in its audit log: Files says whether the run read it.
type Denials struct {
	Seccomp *int64 `json:"seccomp"`
	Network int64  `json:"network"`
	// UnixSocket counts the unix socket calls the supervisor refused
	// (mediation).
	UnixSocket int64 `json:"unix_socket"`
	// LandlockObserved is false when Landlock's denials could not be seen
	// (the kernel's audit is off, or its log is not readable), and
	// LandlockNote then says why (Files.Why).
	LandlockObserved bool   `json:"landlock_observed"`
	LandlockNote     string `json:"landlock_note"`
	// Files is the run's file denials, as the kernel's records showed them.
	Files FileDenials `json:"files"`
	// Log is the --log-denials file, or null.
	Log *string `json:"log"`
}

// FileDenials is what the run saw of its file denials (each is a "file"
// line of the denial log, with its rule).
type FileDenials struct {
	// Observed: the kernel's Landlock records of the run were read; Count
	// is how many denials they showed, and KernelCount how many the
	// kernel counted for the run's domain, recorded or not (null when it
	// did not say: no denial, or not in time).
	Observed    bool    `json:"observed"`
	Count       int64   `json:"count"`
	KernelCount *uint64 `json:"kernel_count"`
	// Why says why they were not observed, or what was missed ("" for
	// neither).
	Why string `json:"why"`
	// Unseen says what the run refuses that no record shows (exact
	// mode's mount namespace), "" for nothing.
	Unseen string `json:"unseen"`
}

// Input is what a report is made from. Explain is the decision (nil when
// the run was refused before it could be prepared).
type Input struct {
	ToolVersion string
	StartedAt   time.Time
	Program     []string
	Explain     *Explain
	Result      supervisor.Result
	// DenialLog is the --log-denials file ("" when none).
	DenialLog string
	// ObservedSeccomp is true when seccomp's denials were watched.
	ObservedSeccomp bool
}

// Build makes the report.
func Build(in Input) *Report {
	res := in.Result
	r := &Report{
		Version: Version, Tool: "sandbox-executable", ToolVersion: in.ToolVersion,
		StartedAt: in.StartedAt.UTC(), Program: in.Program,
		Ending: string(res.Ending), ExitCode: res.ExitCode, Started: res.Started,
		WallSeconds:  res.Wall.Seconds(),
		Degradations: []string{},
		Rlimits:      []Rlimit{},
	}
	if r.Program == nil {
		r.Program = []string{}
	}
	if res.Signal != 0 {
		name := unix.SignalName(res.Signal)
		r.Signal = &name
	}
	if res.Err != nil {
		msg := res.Err.Error()
		r.Error = &msg
	}
	if x := in.Explain; x != nil {
		e := x.Enforcement
		r.Enforcement = &e
		r.Degradations = append(r.Degradations, x.Degradations...)
		r.Rlimits = append(r.Rlimits, x.Rlimits...)
	}
	r.WriteBack = res.WriteBack
	if c := res.Cgroup; c != nil {
		r.Cgroup = &Cgroup{Mode: string(c.Mode), Path: c.Path}
		st := c.Stats
		r.CPU = &CPU{UserSeconds: st.CPUUser.Seconds(), SystemSeconds: st.CPUSystem.Seconds(), TotalSeconds: st.CPUUsage.Seconds()}
		if st.MemoryPeakBytes > 0 {
			v := st.MemoryPeakBytes
			r.MemoryPeakBytes = &v
		}
		if st.PidsPeak > 0 {
			v := st.PidsPeak
			r.PidsPeak = &v
		}
		r.OOMKills, r.PidsLimitHits = st.OOMKills, st.PidsLimitHits
	}
	if p := res.Proxy; p != nil {
		r.Network = &Network{Allowed: p.Allowed, Refused: p.Refused, Failed: p.Failed}
	}
	r.Denials = Denials{Network: res.Denials.Network, UnixSocket: res.Denials.UnixSocket}
	r.Denials.Files = fileDenials(res)
	r.Denials.LandlockObserved, r.Denials.LandlockNote = r.Denials.Files.Observed, r.Denials.Files.Why
	if in.ObservedSeccomp {
		n := res.Denials.Seccomp
		r.Denials.Seccomp = &n
	}
	if in.DenialLog != "" {
		log := in.DenialLog
		r.Denials.Log = &log
	}
	return r
}

// fileDenials is the report's part of the run's file denials: what the
// service saw, or, for a run that never got that far, why not.
func fileDenials(res supervisor.Result) FileDenials {
	if f := res.Files; f != nil {
		return FileDenials{Observed: f.Observed, Count: f.Count, KernelCount: f.KernelCount, Why: f.Why, Unseen: f.Unseen}
	}
	if !res.Started {
		return FileDenials{Why: "the program did not run"}
	}
	return FileDenials{Why: "not read"}
}

// Write writes r as indented JSON.
func (r *Report) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
