package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandbox-executable/internal/testcap"
)

// systemPath is where the runtimes are looked for: not a user's own
// (pyenv shims under /root are not the unprivileged user's to run).
const systemPath = "/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"

// lookSystem finds tool in systemPath.
func lookSystem(tool string) (string, bool) {
	for _, d := range filepath.SplitList(systemPath) {
		p := filepath.Join(d, tool)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o001 != 0 {
			return p, true
		}
	}
	return "", false
}

// TestDegradedFallbackLetsRuntimesStart: without a cgroup (an unprivileged
// user with no delegated one) and with --allow-degraded, the per-process
// memory fallback must not kill runtimes at start. Under RLIMIT_AS at the
// memory limit V8 could not reserve its code range and the Go runtime its
// page summary; RLIMIT_DATA counts only what a process really allocates,
// and still stops a process that allocates more than the limit.
func TestDegradedFallbackLetsRuntimesStart(t *testing.T) {
	isoNeedRoot(t)
	cases := []struct {
		tool string
		argv []string
		want string
	}{
		{"node", []string{"node", "-e", "console.log('node ' + (1+1))"}, "node 2"},
		{"npm", []string{"npm", "--version"}, "."},
		{"go", []string{"go", "version"}, "go version"},
		{"python3", []string{"python3", "-c", "print('python', 1+1)"}, "python 2"},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			path, ok := lookSystem(c.tool)
			if !ok {
				testcap.Skipf(t, testcap.Installed, "%s is not installed for every user in %s", c.tool, systemPath)
			}
			w := isoWorkspace(t, isoNobody)
			argv := append([]string{path}, c.argv[1:]...)
			r := run(t, runOpts{env: append(w.env(), "PATH="+systemPath), dir: w.root, cred: isoNobody.cred},
				append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root), "--allow-degraded",
					"--resource-limits", limits(512, 64, 60, 120), "--"}, argv...)...)
			if !strings.Contains(r.stderr, "RLIMIT_DATA") {
				t.Fatalf("the run did not fall back to per-process limits (a cgroup was had?): %v", r)
			}
			if r.code != 0 || !strings.Contains(r.stdout, c.want) {
				t.Errorf("%s did not start under the fallback: %v", c.tool, r)
			}
		})
	}
	t.Run("allocation bounded", func(t *testing.T) {
		python, ok := lookSystem("python3")
		if !ok {
			testcap.Skipf(t, testcap.Installed, "python3 is not installed for every user")
		}
		w := isoWorkspace(t, isoNobody)
		r := run(t, runOpts{env: w.env(), dir: w.root, cred: isoNobody.cred},
			"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root), "--allow-degraded",
			"--resource-limits", limits(256, 64, 60, 120), "--", python, "-c", "b = bytearray(600 << 20); print('allocated')")
		if r.code == 0 || strings.Contains(r.stdout, "allocated") {
			t.Errorf("600 MB allocated under a 256 MB per-process fallback: %v", r)
		}
	})
}
