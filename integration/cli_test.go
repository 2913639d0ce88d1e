package integration

import (
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fixturesDir is the contract's fixtures, copied into the policy package.
func fixturesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "policy", "testdata", "contract")
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixturesDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBadInputIsRefusedWithOneLine: every malformed fixture is refused with
// exit 125, exactly one stderr line that names the argument, nothing on
// stdout, and the program never starts.
func TestBadInputIsRefusedWithOneLine(t *testing.T) {
	w := newWorkspace(t)
	marker := filepath.Join(w.root, "src", "ran")
	ents, err := os.ReadDir(fixturesDir())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{}
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == "bad-enormous-array.json":
			// serde accepts it; its roots do not exist here.
		case strings.HasPrefix(name, "bad-") && strings.Contains(name, "limits"):
			cases[name] = []string{"--sandbox-policy", roPolicy, "--resource-limits", fixture(t, name)}
		case strings.HasPrefix(name, "bad-"), name == "policy-danger_full_access.json", name == "policy-external_sandbox.json":
			cases[name] = []string{"--sandbox-policy", fixture(t, name)}
		}
	}
	cases["unknown field"] = []string{"--sandbox-policy", `{"type":"read_only","network_access":false,"future_restriction":true}`}
	cases["unknown syscall"] = []string{"--sandbox-policy", roPolicy, "--seccomp-profile", `{"blocked_syscalls":["ptrace","ptarce"]}`}
	cases["missing root"] = []string{"--sandbox-policy", `{"type":"workspace_write","writable_roots":[{"root":"/nonexistent/root"}]}`}
	cases["unknown option"] = []string{"--sandbox-policy", roPolicy, "--frobnicate"}
	cases["no program"] = []string{"--sandbox-policy", roPolicy}
	cases["policy file missing"] = []string{"--sandbox-policy", "@/nonexistent/policy.json"}
	cases["bad fs mode"] = []string{"--sandbox-policy", roPolicy, "--fs-mode", "loose"}
	if len(cases) < 14 {
		t.Fatalf("only %d cases: fixtures missing?", len(cases))
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			if name != "no program" && name != "unknown option" {
				args = append(args, "--", "/bin/sh", "-c", "touch "+marker)
			}
			r := run(t, runOpts{env: w.env(), dir: w.root}, args...)
			if r.code != 125 {
				t.Errorf("exit %d, want 125 (%v)", r.code, r)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q", r.stdout)
			}
			if !strings.HasPrefix(r.stderr, "sandbox-executable: ") || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want exactly one line", r.stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the program ran")
			}
		})
	}
}

// TestExplainShowsThePlanAndRunsNothing: --explain prints the Plan as JSON,
// exits 0, starts nothing; the derived limits and profile follow the
// caller's rules when the flags are absent.
func TestExplainShowsThePlanAndRunsNothing(t *testing.T) {
	w := newWorkspace(t)
	marker := filepath.Join(w.root, "src", "ran")
	r := w.sandbox(t, roPolicy, []string{"--explain"}, "/bin/sh", "-c", "touch "+marker)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%v", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("--explain ran the program")
	}
	var out struct {
		Plan struct {
			Policy     string `json:"policy"`
			Filesystem struct {
				ReadDenied []struct{ Path string } `json:"read_denied"`
			} `json:"filesystem"`
			Limits struct {
				TimeoutSeconds uint64 `json:"timeout_seconds"`
				MemoryBytes    uint64 `json:"memory_bytes"`
				Pids           uint32 `json:"pids"`
			} `json:"limits"`
			Network struct{ Mode string } `json:"network"`
		} `json:"plan"`
		Enforcement struct {
			Filesystem struct{ Mode string } `json:"filesystem"`
			Landlock   struct{ ABI int }     `json:"landlock"`
		} `json:"enforcement"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("explain output is not JSON: %v\n%s", err, r.stdout)
	}
	// read_only without --resource-limits gets the conservative limits.
	if out.Plan.Policy != "read_only" || out.Plan.Limits.TimeoutSeconds != 120 || out.Plan.Limits.MemoryBytes != 512<<20 || out.Plan.Limits.Pids != 64 {
		t.Errorf("plan %+v", out.Plan)
	}
	if out.Plan.Network.Mode != "none" {
		t.Errorf("network %q", out.Plan.Network.Mode)
	}
	found := false
	for _, d := range out.Plan.Filesystem.ReadDenied {
		found = found || d.Path == filepath.Join(w.home, ".ssh")
	}
	if !found {
		t.Errorf("HOME/.ssh not in read_denied: %+v", out.Plan.Filesystem.ReadDenied)
	}
	if out.Enforcement.Filesystem.Mode == "" {
		t.Errorf("no filesystem mode in the explanation")
	}
}

// TestHelpAndVersion: both print on stdout and exit 0.
func TestHelpAndVersion(t *testing.T) {
	r := run(t, runOpts{}, "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "--sandbox-policy JSON") || r.stderr != "" {
		t.Errorf("--help: %v", r)
	}
	r = run(t, runOpts{}, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sandbox-executable ") || r.stderr != "" {
		t.Errorf("--version: %v", r)
	}
}

// TestCallerShapes: the manager form, the cwd+policy form and the legacy
// short form all run the program, with its own arguments untouched.
func TestCallerShapes(t *testing.T) {
	w := newWorkspace(t)
	seccomp := fixture(t, "seccomp-strict.json")
	limits := fixture(t, "limits-conservative.json")
	for name, args := range map[string][]string{
		"manager": {"--sandbox-policy-cwd", w.root, "--sandbox-policy", roPolicy, "--seccomp-profile", seccomp, "--resource-limits", limits, "--", "/bin/echo", "--sandbox-policy", "--"},
		"cwd":     {"--sandbox-policy-cwd", w.root, "--sandbox-policy", roPolicy, "--", "/bin/echo", "--sandbox-policy", "--"},
		"legacy":  {"--sandbox-policy", roPolicy, "echo", "--sandbox-policy", "--"},
	} {
		r := run(t, runOpts{env: w.env(), dir: w.root}, args...)
		if r.code != 0 || r.stdout != "--sandbox-policy --\n" || r.stderr != "" {
			t.Errorf("%s: %v", name, r)
		}
	}
}

// TestStandaloneDefault: with no policy at all the program runs under the
// built-in default: workspace_write on the working directory, VT Code's
// secrets denied, loopback only, limits for the host. A policy can also
// come from a file.
func TestStandaloneDefault(t *testing.T) {
	w := newWorkspace(t)
	r := run(t, runOpts{env: w.env(), dir: w.root}, "--", "/bin/sh", "-c", "echo made > made.txt && cat made.txt; echo x > "+w.out+"/x")
	if r.stdout != "made\n" || r.code == 0 || !strings.Contains(r.stderr, "Read-only file system") {
		t.Errorf("default policy: %v", r)
	}
	if _, err := os.Lstat(filepath.Join(w.out, "x")); err == nil {
		t.Errorf("the default policy let the program write outside the working directory")
	}
	// Secrets and the network, seen failing, not only in --explain.
	if r := run(t, runOpts{env: w.env(), dir: w.root}, "--", probe, "read", filepath.Join(w.home, ".ssh", "id_rsa")); r.code != 1 || !secretDenied(probeResult(r)) {
		t.Errorf("default policy, a secret: %v", r)
	}
	// Loopback only: an inet socket, and nothing outside reachable.
	if r := run(t, runOpts{env: w.env(), dir: w.root}, "--", probe, "socket", "inet"); probeResult(r) != "ok" {
		t.Errorf("default policy, an inet socket: %v", r)
	}
	if r := run(t, runOpts{env: w.env(), dir: w.root}, "--", probe, "connect", "192.0.2.1", "80"); probeResult(r) != "ENETUNREACH" {
		t.Errorf("default policy, a connect outside: %v", r)
	}
	r = run(t, runOpts{env: w.env(), dir: w.root}, "--explain")
	for _, want := range []string{`"policy": "workspace_write"`, `"path": "` + w.root + `"`, `"pids": 4096`, `"timeout_seconds": 600`, `"mode": "loopback"`, filepath.Join(w.home, ".ssh")} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("default --explain lacks %s", want)
		}
	}
	file := filepath.Join(w.out, "policy.json")
	write(t, file, roPolicy)
	r = run(t, runOpts{env: w.env(), dir: w.root}, "--sandbox-policy", "@"+file, "--explain")
	if !strings.Contains(r.stdout, `"policy": "read_only"`) {
		t.Errorf("policy from a file: %v", r)
	}
}

// TestExplainRecordsNothing: --explain with a report or denial log is
// refused, and the file is not created.
func TestExplainRecordsNothing(t *testing.T) {
	w := newWorkspace(t)
	for _, opt := range []string{"--report-file", "--log-denials"} {
		path := filepath.Join(w.out, "out-"+opt[2:])
		r := run(t, runOpts{env: w.env(), dir: w.root}, "--explain", opt, path, "--sandbox-policy", roPolicy)
		if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, opt+" with --explain") {
			t.Errorf("%s: %v", opt, r)
		}
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s: the file was created", opt)
		}
	}
}

// TestLogOptions: a log file alone is a log at level info, and nothing of
// it reaches stdout or stderr; a bad level from the environment is named as
// such.
func TestLogOptions(t *testing.T) {
	w := newWorkspace(t)
	logPath := filepath.Join(w.out, "helper.log")
	r := w.sandbox(t, roPolicy, []string{"--log-file", logPath, "--log-format", "json"}, "/bin/echo", "hi")
	if r.code != 0 || r.stdout != "hi\n" || r.stderr != "" {
		t.Fatalf("%v", r)
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), `"msg":"ended"`) {
		t.Errorf("the log file has no info line: %q", b)
	}
	r = run(t, runOpts{env: append(w.env(), "SANDBOX_EXECUTABLE_LOG=verbose"), dir: w.root}, "--sandbox-policy", roPolicy, "--", "/bin/echo", "hi")
	if r.code != 125 || r.stdout != "" || !strings.Contains(r.stderr, "SANDBOX_EXECUTABLE_LOG") {
		t.Errorf("a bad level in the environment: %v", r)
	}
}

// TestSecretsUnderBothHomes: when $HOME is not the password database's home
// (an MCP server's environment may set it), "~" secrets are denied under
// both (here in the plan --explain shows; denial itself is tested
// elsewhere).
func TestSecretsUnderBothHomes(t *testing.T) {
	pw, err := user.Current()
	if err != nil || pw.HomeDir == "" {
		t.Skip("no password database home")
	}
	w := newWorkspace(t)
	r := run(t, runOpts{env: w.env(), dir: w.root}, "--explain", "--sandbox-policy", roPolicy)
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	for _, p := range []string{filepath.Join(w.home, ".ssh"), filepath.Join(pw.HomeDir, ".ssh")} {
		if !strings.Contains(r.stdout, `"path": "`+p+`"`) {
			t.Errorf("%s not denied in the plan", p)
		}
	}
}

// TestEmbeddedCopiesMustAgree: a workspace_write policy that carries its own
// resource_limits / seccomp_profile, with a flag saying something else, is
// refused: the caller sends one value twice, and a disagreement is not
// guessed at. A policy without them takes the flags.
func TestEmbeddedCopiesMustAgree(t *testing.T) {
	w := newWorkspace(t)
	embedded := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
		"exclude_slash_tmp": true, "exclude_tmpdir_env_var": true,
		"resource_limits": map[string]int{"max_memory_mb": 100, "max_pids": 0, "max_disk_mb": 0, "cpu_time_secs": 0, "timeout_secs": 60},
		"seccomp_profile": map[string]any{"blocked_syscalls": []string{"ptrace", "bpf"}, "allow_namespaces": false, "allow_network_sockets": false, "log_only": false}})
	for _, tc := range []struct{ flag, value string }{
		{"--resource-limits", limits(0, 0, 0, 60)},
		{"--seccomp-profile", `{"blocked_syscalls":[],"allow_namespaces":false,"allow_network_sockets":false,"log_only":false}`},
	} {
		r := w.sandbox(t, embedded, []string{tc.flag, tc.value}, "/bin/echo", "ran")
		if r.code != 125 || r.stdout != "" || !strings.HasPrefix(r.stderr, "sandbox-executable: "+tc.flag+": differs from the policy's own") {
			t.Errorf("%s disagreeing with the policy: %v", tc.flag, r)
		}
	}
	same := limits(100, 0, 0, 60)
	if r := w.sandbox(t, embedded, []string{"--resource-limits", same}, "/bin/echo", "ran"); r.code != 0 || r.stdout != "ran\n" {
		t.Errorf("the same limits twice: %v", r)
	}
	if r := w.sandbox(t, wsPolicy(t, w.root), []string{"--resource-limits", limits(0, 0, 0, 60)}, "/bin/echo", "ran"); r.code != 0 || r.stdout != "ran\n" {
		t.Errorf("a policy without its own limits, and the flag: %v", r)
	}
}
