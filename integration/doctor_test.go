package integration

import (
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// cgroupLayout tells the host's cgroup layout from the filesystems, as an
// oracle independent of the helper's own detection.
func cgroupLayout(t *testing.T) string {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return "unavailable"
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "unified"
	}
	if err := unix.Statfs("/sys/fs/cgroup/unified", &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "hybrid"
	}
	return "legacy"
}

// TestDoctor: doctor --json names this host's cgroup layout and Landlock
// ABI (hybrid and 7 on these machines, unified and 2 in the VM guest), and
// its exit status says whether the strict model is whole.
func TestDoctor(t *testing.T) {
	r := run(t, runOpts{}, "doctor", "--json")
	var rep struct {
		Host struct {
			LandlockABI int    `json:"landlock_abi"`
			CgroupMode  string `json:"cgroup_mode"`
		} `json:"host"`
		Checks []struct {
			ID, Status string
			Strict     bool
		} `json:"checks"`
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if rep.Host.LandlockABI != landlockABI(t) {
		t.Errorf("doctor says Landlock ABI %d, the kernel %d", rep.Host.LandlockABI, landlockABI(t))
	}
	if want := cgroupLayout(t); rep.Host.CgroupMode != want {
		t.Errorf("doctor says cgroups %q, the filesystems %q", rep.Host.CgroupMode, want)
	}
	whole := true
	for _, c := range rep.Checks {
		if c.Strict && c.Status != "ok" {
			whole = false
		}
	}
	if rep.OK != whole || (r.code == 0) != whole {
		t.Errorf("ok %v, exit %d, strict items whole %v", rep.OK, r.code, whole)
	}
	// The text's own run: its exit status agrees with its last line (a
	// second run, not the same answer as the first's on a busy host).
	text := run(t, runOpts{}, "doctor")
	whole = strings.HasSuffix(text.stdout, "every part of the strict model is available\n")
	if (text.code == 0) != whole || (text.code != 0 && text.code != 1) || text.stderr != "" {
		t.Errorf("doctor: %v", text)
	}
}
