package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sandbox-executable/internal/testcap"
)

// TestEnclosingCgroupHoldsTheLimits: where the run's own cgroup cannot be
// made (a container's read-only /sys/fs/cgroup) but the cgroup the helper is
// in already limits memory and pids at least as tightly as the policy asks
// (docker run --memory --pids-limit), the run goes ahead without
// --allow-degraded and the limit really holds: a fork loop stops at the
// enclosing pids.max. A policy asking for less than the enclosing limits is
// still refused. Needs a unified cgroup v2 with the memory and pids
// controllers (the VM guests; the hybrid host's cgroup2 has none) and
// Landlock.
func TestEnclosingCgroupHoldsTheLimits(t *testing.T) {
	isoNeedRoot(t)
	isoNeedTools(t, "unshare", "mount")
	// Without Landlock every run is degraded anyway: the refusal below
	// could not be told from that one.
	needLandlock(t)
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control"); err != nil ||
		!strings.Contains(string(b), "memory") || !strings.Contains(string(b), "pids") {
		testcap.Skipf(t, testcap.UnifiedCgroup, "needs a unified cgroup v2 with memory and pids enabled at its root")
	}
	dir := filepath.Join("/sys/fs/cgroup", "se-enclosing-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	for f, v := range map[string]string{"memory.max": strconv.Itoa(384 << 20), "memory.swap.max": "0", "pids.max": "24"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil && f != "memory.swap.max" {
			t.Fatal(err)
		}
	}
	// The launcher joins the enclosing cgroup, then makes /sys/fs/cgroup
	// read-only in a mount namespace of its own, as a container's is.
	script := `echo $$ > "$0/cgroup.procs" && exec unshare -m --propagation private sh -c 'mount -o remount,bind,ro /sys/fs/cgroup && exec "$@"' sh "$@"`
	via := []string{"sh", "-c", script, dir}
	w := newWorkspace(t)
	report := filepath.Join(w.out, "report.json")
	args := func(memMB, pids int) []string {
		return []string{"--sandbox-policy", roPolicy, "--resource-limits", limits(memMB, pids, 0, 60), "--report-file", report, "--", probe, "forkmax"}
	}
	r := run(t, runOpts{env: w.env(), dir: w.root, via: via}, args(512, 64)...)
	if r.code != 0 {
		t.Fatalf("limits the enclosing cgroup holds: %v", r)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(r.stdout)); err != nil || n >= 24 || n < 8 {
		t.Errorf("forked %q children under the enclosing pids.max 24 (the helper and the probe count too)", r.stdout)
	}
	var rep struct {
		Degradations []string `json:"degradations"`
		Enforcement  struct {
			Cgroup struct {
				Why string `json:"why"`
			} `json:"cgroup"`
		} `json:"enforcement"`
	}
	b, err := os.ReadFile(report)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Degradations) != 0 || !strings.Contains(rep.Enforcement.Cgroup.Why, "pids.max 24 in "+dir) {
		t.Errorf("report: degradations %q, cgroup %q", rep.Degradations, rep.Enforcement.Cgroup.Why)
	}
	// Asking for fewer processes than the enclosing cgroup allows is a
	// limit nothing here can hold.
	if r := run(t, runOpts{env: w.env(), dir: w.root, via: via}, args(512, 16)...); r.code != 125 || !strings.Contains(r.stderr, "no cgroup for the memory, pids and CPU limits") {
		t.Errorf("max_pids 16 under an enclosing 24: %v", r)
	}
}
