package cgroups

import (
	"strings"

	"sandbox-executable/remedy"
)

// UnavailableError says that this host, or this process on it, cannot have
// the cgroup New was asked for: no cgroup filesystem, a controller that is
// not there or not delegated, or no permission to create cgroups. Callers
// recognise it with errors.As and decide whether to run without limits (and
// say so) or refuse.
type UnavailableError struct {
	// Mode is the host layout.
	Mode Mode
	// Missing says what is missing ("the memory controller", "permission to
	// create cgroups in /sys/fs/cgroup/pids").
	Missing string
	// Hint says how to provide it, in words that name no way of running
	// the helper; Advice, when set, is that part (rendered by Message).
	Hint   string
	Advice Advice
	// Err is the underlying error, if any.
	Err error
}

func (e *UnavailableError) Error() string { return e.Message(nil) }

// Message is the error's text with its Advice in w's words (the CLI's
// flags and launcher; nil: plain words).
func (e *UnavailableError) Message(w remedy.Words) string {
	var b strings.Builder
	b.WriteString("cgroups: unavailable (")
	b.WriteString(string(e.Mode))
	b.WriteString(" host): missing ")
	b.WriteString(e.Missing)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "cgroups: "))
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	if e.Advice != 0 {
		b.WriteString("; ")
		b.WriteString(e.Advice.Text(w))
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Advice is how to get a cgroup by running the helper differently; Text
// says it with a remedy.DelegatedScope example.
type Advice int

// Advice of the errors of New.
const (
	// AdvisePrivilege: root, or a delegated cgroup.
	AdvisePrivilege Advice = iota + 1
	// AdviseDelegate: a cgroup delegated to this user, or root.
	AdviseDelegate
	// AdviseAlone: the supervisor alone in its own delegated cgroup, or
	// a parent cgroup without processes.
	AdviseAlone
)

// Text renders a in w's words.
func (a Advice) Text(w remedy.Words) string {
	eg := "(e.g. " + w.Say(remedy.DelegatedScope) + " " + w.Say(remedy.Invocation) + ")"
	switch a {
	case AdvisePrivilege:
		return "run as root, or inside a delegated cgroup " + eg
	case AdviseDelegate:
		return "run inside a cgroup delegated to this user " + eg + ", or as root"
	case AdviseAlone:
		return "run the supervisor alone in its own delegated cgroup " + eg + ", or pass a parent cgroup without processes"
	}
	return ""
}
