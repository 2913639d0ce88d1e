package main

import (
	"sandbox-executable/policy"
	"sandbox-executable/remedy"
)

// The CLI's words for what the packages below it report in types: the
// flags that carry each input (policy.Source) and, in remedies.go, the
// advice each typed remedy stands for.

// flagOf is the flag that carries s, or s's plain name for an input no flag
// carries (the values derived from a read_only policy).
func flagOf(s policy.Source) string {
	switch s {
	case policy.SourcePolicy:
		return "--sandbox-policy"
	case policy.SourcePolicyCwd:
		return "--sandbox-policy-cwd"
	case policy.SourceSeccompProfile:
		return "--seccomp-profile"
	case policy.SourceResourceLimits:
		return "--resource-limits"
	}
	return s.String()
}

// say is the CLI's rendering of a remedy.
func say(r remedy.Remedy) string {
	switch r {
	case remedy.AllowDegraded:
		return "--allow-degraded"
	case remedy.DelegatedScope:
		return "systemd-run --user --scope -p Delegate=yes"
	case remedy.Invocation:
		return prog + " ..."
	case remedy.FSLandlock:
		return "--fs-mode landlock"
	case remedy.FSExact:
		return "--fs-mode exact"
	case remedy.CgroupParent:
		return "--cgroup-parent PATH"
	}
	return remedy.Plain(r)
}
