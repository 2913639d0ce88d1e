package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// shapeCases are the fixed runs whose --explain, stderr line and exit code
// must not change when the code is reshaped: plain plans, every network
// mode, limits, the filesystem modes, and refusals whose one stderr line
// names the flag and the remedy.
func shapeCases(t *testing.T, w *workspace) [][]string {
	cwd := []string{"--sandbox-policy-cwd", w.root}
	ws := wsPolicy(t, w.root)
	allow := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
		"network_allowlist": []map[string]any{{"domain": "example.com", "port": 443}}})
	full := policyJSON(t, map[string]any{"type": "read_only", "network_access": true, "network_allowlist": []any{}})
	c := func(a ...string) []string { return append(append([]string{}, cwd...), a...) }
	return [][]string{
		c("--sandbox-policy", roPolicy, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", ws, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", allow, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", full, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", ws, "--resource-limits", `{"max_memory_mb":256,"max_pids":64,"cpu_time_secs":5,"timeout_secs":9}`, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", ws, "--fs-mode", "landlock", "--explain", "--", "/bin/true"),
		c("--sandbox-policy", ws, "--fs-mode", "exact", "--explain", "--", "/bin/true"),
		c("--sandbox-policy", ws, "--fs-mode", "bogus", "--explain", "--", "/bin/true"),
		c("--sandbox-policy", ws, "--seccomp-profile", `{"blocked_syscalls":["no_such_call"]}`, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", `{"type":"workspace_write","writable_roots":[],"seccomp_profile":{"blocked_syscalls":["no_such_call"]}}`, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", `{"type":"workspace_write","writable_roots":[],"network_access":true,"seccomp_profile":{"allow_network_sockets":false}}`, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", `{"type":"workspace_write","writable_roots":[],"network_access":true,"seccomp_profile":{"allow_network_sockets":false}}`, "--seccomp-profile", `{"allow_network_sockets":false}`, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", ws, "--seccomp-profile", `{"log_only":true,"allow_network_sockets":true,"blocked_syscalls":["connect","ptrace","mount"]}`, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", allow, "--seccomp-profile", `{"allow_namespaces":true,"allow_network_sockets":true,"blocked_syscalls":["mount","sendmsg"]}`, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", ws, "--resource-limits", `{"timeout_secs":99999999999}`, "--explain", "--", "/bin/true"),
		c("--sandbox-policy", `{"type":"workspace_write","writable_roots":[{"root":"relative"}]}`, "--", "/bin/true"),
		c("--sandbox-policy", `{"type":"danger_full_access"}`, "--", "/bin/true"),
		{"--sandbox-policy-cwd", filepath.Join(w.out, "missing"), "--sandbox-policy", roPolicy, "--", "/bin/true"},
		c("--sandbox-policy", ws, "--", "/no/such/program"),
	}
}

// TestExplainEnforcementValidates: the enforcement --explain prints is the
// report's, and validates against its schema.
func TestExplainEnforcementValidates(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join(filepath.Dir(file), "..", "report", "schema.json") + "#/$defs/enforcement")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkspace(t)
	n := 0
	for _, args := range shapeCases(t, w) {
		r := run(t, runOpts{env: w.env(), dir: w.root}, args...)
		if r.code != 0 || !strings.Contains(strings.Join(args, " "), "--explain") {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("%v: not JSON: %v", args, err)
		}
		b, _ := json.Marshal(doc["enforcement"])
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err := sch.Validate(v); err != nil {
			t.Errorf("%v: the enforcement does not validate: %v", args, err)
		}
		n++
	}
	if n < 5 {
		t.Fatalf("only %d of the cases printed a plan", n)
	}
}

// TestShapeAgainstBase compares the fixed runs with a base binary's, byte
// for byte (stdout, stderr, exit code), when $SANDBOX_EXECUTABLE_BASE names
// one (built from the commit before a reshaping: an integrator's check, not
// a CI one).
func TestShapeAgainstBase(t *testing.T) {
	base := os.Getenv("SANDBOX_EXECUTABLE_BASE")
	if base == "" {
		t.Skip("SANDBOX_EXECUTABLE_BASE is not set")
	}
	w := newWorkspace(t)
	for _, args := range shapeCases(t, w) {
		// The plan counts entries of directories other processes on the
		// host change (Landlock's rules for siblings): a difference must
		// hold in three tries to count.
		var diff string
		for try := 0; try < 3; try++ {
			if diff = compareWithBase(t, w, base, args); diff == "" {
				break
			}
		}
		if diff != "" {
			t.Errorf("%v:\n%s", args, diff)
		}
	}
}

// compareWithBase runs args with both binaries and says how they differ
// ("" when they do not).
func compareWithBase(t *testing.T, w *workspace, base string, args []string) string {
	r := run(t, runOpts{env: w.env(), dir: w.root}, args...)
	cmd := exec.Command(base, args...)
	cmd.Dir = w.root
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + os.Getenv("HOME"), "LANG=C"}, w.env()...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	if os.Getenv("SHAPE_SHOW") != "" {
		t.Logf("%d %q", code, errb.String())
	}
	if r.code != code || r.stderr != errb.String() || r.stdout != out.String() {
		return fmt.Sprintf(" now  exit %d, stderr %q\n base exit %d, stderr %q\n stdout: %s", r.code, r.stderr, code, errb.String(), lineDiff(out.String(), r.stdout))
	}
	return ""
}

// lineDiff names the first line where got differs from want ("same" when
// none does).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d: base %q, now %q", i+1, wl, gl)
		}
	}
	return "same"
}
