package supervisor

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"sandbox-executable/cgroups"
	"sandbox-executable/cgroups/userscope"
)

// scopeTimeout bounds the whole exchange with the user's manager: connect,
// StartTransientUnit, and the job (which moves one process, the user
// manager asking the system manager to do it). Milliseconds on a real host;
// up to 5 s was seen in a software-emulated guest on a loaded machine.
const scopeTimeout = 30 * time.Second

// cgroupInUserScope is tried when the run's cgroup cannot be made in the
// cgroup this process is in: an unprivileged process on a unified host (an
// SSH login's root-owned session-N.scope) asks its systemd user manager for
// a delegated transient scope holding itself. It returns the host as seen
// from that scope (cgroups.Ready is then tried again), or nil and why a
// scope was no help (added to the refusal). Nothing here runs as root, with
// --cgroup-parent, or on a host Ready had no trouble with.
func (pr *Prepared) cgroupInUserScope(host *cgroups.Host, lim cgroups.Limits) (*cgroups.Host, string) {
	if !pr.userScopeApplies(host, lim) {
		return nil, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), scopeTimeout)
	defer cancel()
	t := time.Now()
	sc, err := userscope.Join(ctx, userscope.Options{Prefix: "sandbox-executable-", Description: "sandbox-executable run"})
	if errors.Is(err, userscope.ErrNoManager) {
		return nil, "; no systemd user manager answered"
	}
	if err != nil {
		return nil, "; no delegated scope from the systemd user manager: " + strings.TrimPrefix(err.Error(), "userscope: ")
	}
	if pr.cfg.Log != nil {
		pr.cfg.Log.Debug("systemd user scope", "unit", sc.Unit, "via", sc.Via, "took", time.Since(t))
	}
	h, err := cgroups.Detect()
	if err != nil {
		return nil, "; " + sc.Unit + " from the systemd user manager did not help: " + err.Error()
	}
	return h, ""
}

// v2HasAll reports whether the cgroup2 root offers every controller lim
// needs: where it does not, no scope below it can have them either.
func v2HasAll(h *cgroups.Host, lim cgroups.Limits) bool {
	return h.V2 != nil && (lim.MemoryBytes == 0 || h.V2.Has("memory")) && (lim.Pids == 0 || h.V2.Has("pids")) &&
		(lim.CPUQuotaCores == 0 || h.V2.Has("cpu"))
}

// userScopeApplies reports whether cgroupInUserScope would ask systemd for
// a scope: a non-root user's run on a writable unified hierarchy that has
// every controller the limits need, with no --cgroup-parent.
func (pr *Prepared) userScopeApplies(host *cgroups.Host, lim cgroups.Limits) bool {
	// A read-only cgroupfs (a container's) stays read-only in any scope.
	return os.Geteuid() != 0 && pr.cfg.CgroupParent == "" && host.Mode == cgroups.Unified && v2HasAll(host, lim) && !cgroupfsReadOnly()
}
