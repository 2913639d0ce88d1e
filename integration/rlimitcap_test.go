package integration

import (
	"strings"
	"testing"
)

// TestCallersLowerHardLimitStays: a user whose hard RLIMIT_NPROC is below
// the one the helper would set without a cgroup (the default's pids limit)
// cannot raise it, and need not: the caller's lower limit is the stricter
// one, and the run goes on under it instead of failing at the prlimit.
func TestCallersLowerHardLimitStays(t *testing.T) {
	isoNeedRoot(t)
	isoNeedTools(t, "prlimit")
	w := isoWorkspace(t, isoNobody)
	r := run(t, runOpts{env: isoEnv(w), dir: w.root, cred: isoNobody.cred, via: []string{"prlimit", "--nproc=3000:3000", "--"}},
		"--allow-degraded", "--", probe, "rlimit", "nproc")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "3000 3000" {
		t.Fatalf("a run under the caller's hard RLIMIT_NPROC of 3000: %v, want it run with 3000 3000", r)
	}
}
