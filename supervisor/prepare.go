// Package supervisor runs one sandboxed program and owns its whole life: it
// decides how a Plan is enforced on this host, builds the kernel objects
// (Landlock ruleset, seccomp filter, rlimits, cgroup), starts the program
// through the spawn stage, forwards signals, enforces the wall-clock timeout,
// reaps every process the program leaves behind, and reports how the run
// ended.
package supervisor

import (
	"fmt"
	"strings"
	"time"

	"sandbox-executable/landlock"
	"sandbox-executable/policy"
	"sandbox-executable/rlimit"
	"sandbox-executable/seccomp"
	"sandbox-executable/spawn"
)

// Config is one run, as the command line asked for it.
type Config struct {
	Plan *policy.Plan
	// Argv is the program and its arguments; Argv[0] is searched like
	// execvp does, on the program's own PATH.
	Argv []string
	// KeepFDs stay open in the program; every other fd above 2 is closed.
	KeepFDs []int
	// AllowDegraded lets a run go ahead when the kernel cannot enforce part
	// of the policy's boundary; what is missing is then reported.
	AllowDegraded bool
	// LogDenials asks the kernel to log Landlock denials (ABI 7).
	LogDenials bool
	// Grace is how long the tree gets between SIGTERM and SIGKILL on a
	// timeout; 0 means DefaultGrace.
	Grace time.Duration
}

// DefaultGrace is the time between SIGTERM and SIGKILL on a timeout.
const DefaultGrace = 2 * time.Second

// Prepared is every decision for a run, made but not yet applied: the
// kernel objects are built by Run. It is what --explain prints.
type Prepared struct {
	Plan       *policy.Plan     `json:"plan"`
	Argv       []string         `json:"program"`
	Candidates []string         `json:"exec_candidates"`
	Landlock   *landlock.Spec   `json:"-"`
	Seccomp    *seccomp.Program `json:"-"`
	Rlimits    []rlimit.Limit   `json:"rlimits"`
	// Degradations lists what is not enforced, each with its reason; empty
	// unless AllowDegraded let the run go ahead anyway.
	Degradations []string    `json:"degradations,omitempty"`
	Enforcement  Enforcement `json:"enforcement"`

	cfg Config
}

// Enforcement summarizes how each part of the Plan is enforced on this host.
type Enforcement struct {
	Landlock LandlockReport `json:"landlock"`
	Seccomp  SeccompReport  `json:"seccomp"`
	Timeout  string         `json:"timeout"`
}

// LandlockReport is the Landlock part of Enforcement.
type LandlockReport struct {
	ABI         int                  `json:"abi"`
	Mode        string               `json:"filesystem_mode"`
	HandledFS   []string             `json:"handled_fs"`
	HandledNet  []string             `json:"handled_net,omitempty"`
	Scoped      []string             `json:"scoped,omitempty"`
	Rules       int                  `json:"rules"`
	Narrowed    []landlock.Narrowing `json:"narrowed,omitempty"`
	NotEnforced []landlock.Gap       `json:"not_enforced,omitempty"`
}

// SeccompReport is the seccomp part of Enforcement.
type SeccompReport struct {
	Rules           int    `json:"rules"`
	Instructions    int    `json:"bpf_instructions"`
	BadArch         string `json:"foreign_architecture"`
	Library         string `json:"libseccomp"`
	NoNewPrivileges bool   `json:"no_new_privs"`
}

// RefusedError is returned when the host cannot enforce what the policy
// asks and degradation was not allowed. Nothing was started.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// Prepare makes every decision for cfg on this host without creating any
// kernel object or starting anything.
func Prepare(cfg Config) (*Prepared, error) {
	p := cfg.Plan
	pr := &Prepared{Plan: p, Argv: cfg.Argv, cfg: cfg}
	pr.Candidates = execCandidates(cfg.Argv[0], p.Env.Vars)

	abi := landlock.ABI()
	spec, err := landlock.Compute(p, landlock.Options{ABI: abi, LogDenials: cfg.LogDenials})
	if err != nil {
		return nil, err
	}
	pr.Landlock = spec
	var boundary []string
	for _, g := range spec.Gaps {
		if g.WriteBoundary {
			boundary = append(boundary, fmt.Sprintf("landlock %s: %s", g.Right, g.Effect))
		}
	}
	if len(boundary) > 0 {
		if !cfg.AllowDegraded {
			return nil, &RefusedError{Reason: "refusing to run: " + strings.Join(boundary, "; ") +
				" (Landlock ABI " + fmt.Sprint(abi) + "; --allow-degraded runs anyway and reports it)"}
		}
		pr.Degradations = append(pr.Degradations, boundary...)
	}

	prog, err := seccomp.Compile(&p.Seccomp)
	if err != nil {
		return nil, err
	}
	pr.Seccomp = prog

	_, _, nofile := spawn.InitialState()
	pr.Rlimits = rlimit.For(p.Limits, rlimit.Options{NofileCur: nofile.Cur, NofileMax: nofile.Max})

	pr.Enforcement = Enforcement{
		Landlock: LandlockReport{
			ABI:         abi,
			Mode:        "landlock-only",
			HandledFS:   spec.HandledFS.Names(),
			HandledNet:  netNames(spec.HandledNet),
			Scoped:      scopeNames(spec.Scoped),
			Rules:       len(spec.Rules) + len(spec.Ports),
			Narrowed:    spec.Narrowed,
			NotEnforced: spec.Gaps,
		},
		Seccomp: SeccompReport{
			Rules:           prog.Rules,
			Instructions:    len(prog.BPF) / 8,
			BadArch:         "kill_process",
			Library:         seccomp.LibraryVersion(),
			NoNewPrivileges: true,
		},
		Timeout: fmt.Sprintf("%d s wall clock for the whole tree (SIGTERM, %s grace, SIGKILL; exit 124)", p.Limits.TimeoutSeconds, grace(cfg)),
	}
	return pr, nil
}

func grace(cfg Config) time.Duration {
	if cfg.Grace > 0 {
		return cfg.Grace
	}
	return DefaultGrace
}

func netNames(n uint64) []string {
	var out []string
	if n&1 != 0 {
		out = append(out, "bind_tcp")
	}
	if n&2 != 0 {
		out = append(out, "connect_tcp")
	}
	return out
}

func scopeNames(s uint64) []string {
	var out []string
	if s&1 != 0 {
		out = append(out, "abstract_unix_socket")
	}
	if s&2 != 0 {
		out = append(out, "signal")
	}
	return out
}
