package cgroups

import "strings"

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
	// Hint says how to provide it.
	Hint string
	// Err is the underlying error, if any.
	Err error
}

func (e *UnavailableError) Error() string {
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
	return b.String()
}

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Hints shared by the errors of New.
const (
	hintPrivilege = "run as root, or inside a delegated cgroup (e.g. systemd-run --user --scope -p Delegate=yes sandbox-executable ...)"
	hintDelegate  = "run inside a cgroup delegated to this user (e.g. systemd-run --user --scope -p Delegate=yes sandbox-executable ...), or as root"
)
