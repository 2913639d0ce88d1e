// Package remedy names, as values, the ways of running the helper
// differently that an error or a report may advise: the packages that find a
// problem say which remedy fits, and the CLI says it in its own words (its
// flags, its program name). So no package below the CLI writes a flag.
package remedy

// Remedy is one piece of advice.
type Remedy int

// Remedies.
const (
	// AllowDegraded: accept a weaker sandbox, reported as such
	// (the CLI: --allow-degraded).
	AllowDegraded Remedy = iota + 1
	// DelegatedScope: run inside a cgroup that systemd delegates to the
	// user (the CLI: systemd-run --user --scope -p Delegate=yes).
	DelegatedScope
	// Invocation: the helper's own command line, as it would follow a
	// launcher such as DelegatedScope's (the CLI: sandbox-executable ...).
	Invocation
	// FSLandlock: the filesystem mode that uses Landlock alone (the CLI:
	// --fs-mode landlock).
	FSLandlock
	// FSExact: the filesystem mode that needs a mount namespace (the
	// CLI: --fs-mode exact).
	FSExact
	// CgroupParent: a cgroup to make the run's in (the CLI:
	// --cgroup-parent PATH).
	CgroupParent
)

// Words renders a remedy; the CLI gives its own. A nil Words says Plain.
type Words func(Remedy) string

// Say renders r.
func (w Words) Say(r Remedy) string {
	if w == nil {
		return Plain(r)
	}
	return w(r)
}

// Plain renders r without a CLI's words (a library caller, tests).
func Plain(r Remedy) string {
	switch r {
	case AllowDegraded:
		return "allowing a degraded run"
	case DelegatedScope:
		return "a systemd scope with Delegate=yes"
	case Invocation:
		return "the helper"
	case FSLandlock:
		return "the Landlock-only filesystem mode"
	case FSExact:
		return "the exact filesystem mode"
	case CgroupParent:
		return "a cgroup parent given"
	}
	return "another way"
}
