package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"sandbox-executable/internal/testcap"
)

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
)

// reportSchema compiles report/schema.json.
func reportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	schemaOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		path := filepath.Join(filepath.Dir(file), "..", "report", "schema.json")
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		var err error
		if schema, err = c.Compile(path); err != nil {
			t.Fatalf("schema: %v", err)
		}
	})
	return schema
}

// reportOf runs the helper with --report-file and returns the report,
// validated against the schema.
func reportOf(t *testing.T, w *workspace, helperOpts []string, argv ...string) (result, map[string]any) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.json")
	args := append([]string{"--sandbox-policy-cwd", w.root, "--report-file", path}, helperOpts...)
	r := run(t, runOpts{env: w.env(), dir: w.root}, append(append(args, "--"), argv...)...)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report: %v (%v)", err, r)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, b)
	}
	if err := reportSchema(t).Validate(doc); err != nil {
		t.Fatalf("report does not validate: %v\n%s", err, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return r, m
}

// TestReportForEveryEnding: each way a run can end produces a report that
// validates against the schema and names that ending.
func TestReportForEveryEnding(t *testing.T) {
	w := newWorkspace(t)
	ro := []string{"--sandbox-policy", roPolicy}
	cases := []struct {
		ending string
		code   int
		opts   []string
		argv   []string
		cgroup bool
	}{
		{"exited", 3, ro, []string{"/bin/sh", "-c", "exit 3"}, false},
		{"signaled", 137, ro, []string{"/bin/sh", "-c", "kill -KILL $$"}, false},
		{"timeout", 124, append(ro, "--resource-limits", limits(0, 0, 0, 1)), []string{probe, "sleep", "30"}, false},
		{"cpu_budget", 152, append(ro, "--resource-limits", limits(0, 0, 1, 60)), []string{probe, "spin", "2"}, true},
		{"oom", 137, append(ro, "--resource-limits", limits(128, 0, 0, 60)), []string{probe, "hog", "1024"}, true},
		{"pids_limit_hit", 1, append(ro, "--resource-limits", limits(0, 8, 0, 60)), []string{"/bin/sh", "-c", `"$0" forkmax >/dev/null; exit 1`, probe}, true},
		{"setup_failed", 126, ro, []string{filepath.Join(w.root, "src", "main.c")}, false},
		{"refused", 125, []string{"--sandbox-policy", `{"type":"danger_full_access"}`}, []string{"/bin/true"}, false},
	}
	for _, c := range cases {
		t.Run(c.ending, func(t *testing.T) {
			if c.cgroup {
				needCgroups(t)
			}
			r, rep := reportOf(t, w, c.opts, c.argv...)
			if rep["ending"] != c.ending || r.code != c.code || int(rep["exit_code"].(float64)) != c.code {
				t.Errorf("ending %v exit %v (helper %d), want %s %d", rep["ending"], rep["exit_code"], r.code, c.ending, c.code)
			}
		})
	}
}

// TestReportFigures: a 100 MB hog's peak memory is reported between 100 MB
// and its limit, with its CPU time and the enforcement applied.
func TestReportFigures(t *testing.T) {
	needCgroups(t)
	w := newWorkspace(t)
	_, rep := reportOf(t, w, []string{"--sandbox-policy", roPolicy, "--resource-limits", limits(512, 0, 0, 60)}, probe, "hog", "100")
	if rep["ending"] != "exited" {
		t.Fatalf("ending %v", rep["ending"])
	}
	peak, _ := rep["memory_peak_bytes"].(float64)
	if peak < 100<<20 || peak > 512<<20 {
		t.Errorf("peak memory %.0f, want between 100 MB and 512 MB", peak)
	}
	if cpu, _ := rep["cpu"].(map[string]any); cpu == nil || cpu["total_seconds"].(float64) <= 0 {
		t.Errorf("cpu %v", rep["cpu"])
	}
	enf := rep["enforcement"].(map[string]any)
	if enf["landlock"].(map[string]any)["abi"].(float64) < 1 || enf["filesystem"].(map[string]any)["mode"] == "" {
		t.Errorf("enforcement %v", enf)
	}
	if rep["cgroup"] == nil {
		t.Errorf("no cgroup in the report")
	}
}

// TestDenialLog: with --log-denials a blocked call and a refused proxy
// request each show up once, with the right fields, and the program's own
// output is unchanged.
func TestDenialLog(t *testing.T) {
	w := newWorkspace(t)
	log := filepath.Join(t.TempDir(), "denials.jsonl")
	plain := w.sandbox(t, roPolicy, nil, probe, "ptrace")
	r, rep := reportOf(t, w, []string{"--sandbox-policy", roPolicy, "--log-denials", log}, probe, "ptrace")
	if r.stdout != plain.stdout || r.code != plain.code || r.stdout != "EPERM\n" {
		t.Errorf("observing changed the outcome: %v, unobserved %v", r, plain)
	}
	lines := readLines(t, log)
	if len(lines) != 1 || lines[0]["kind"] != "seccomp" || lines[0]["syscall"] != "ptrace" || lines[0]["errno"] != "EPERM" ||
		lines[0]["exe"] != probe || lines[0]["pid"].(float64) <= 0 {
		t.Errorf("denial log %v", lines)
	}
	den := rep["denials"].(map[string]any)
	if den["seccomp"].(float64) != 1 || den["log"] != log || den["landlock_observed"] != false {
		t.Errorf("report denials %v", den)
	}

	// A refused proxy request.
	if os.Geteuid() == 0 {
		rm := newRemote(t)
		log2 := filepath.Join(t.TempDir(), "net.jsonl")
		out := rm.sandbox(t, w, allowlist("allowed.test:80"), []string{"--log-denials", log2},
			`curl -s -m 10 -o /dev/null -w "%{http_code}\n" http://denied.test:80/`)
		if out.stdout != "403\n" {
			t.Errorf("proxy refusal: %v", out)
		}
		lines := readLines(t, log2)
		if len(lines) != 1 || lines[0]["kind"] != "network" || lines[0]["host"] != "denied.test" || lines[0]["port"].(float64) != 80 ||
			!strings.Contains(lines[0]["reason"].(string), "denied.test") {
			t.Errorf("network denial log %v", lines)
		}
	}
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("denial log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// TestReportRlimitsOfADegradedRun: without a cgroup (an unprivileged user)
// and with --allow-degraded, the report lists the per-process fallbacks the
// program was given, and the program has them.
func TestReportRlimitsOfADegradedRun(t *testing.T) {
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root to switch to nobody")
	}
	w := newWorkspace(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.json")
	args := []string{"--sandbox-policy", roPolicy, "--resource-limits", limits(256, 32, 0, 60), "--allow-degraded", "--report-file", path,
		"--", "/bin/sh", "-c", "ulimit -d"}
	r := run(t, runOpts{env: w.env(), dir: "/", cred: &syscall.Credential{Uid: 65534, Gid: 65534}}, args...)
	if r.code != 0 || r.stdout != "262144\n" || !strings.Contains(r.stderr, "degraded (--allow-degraded)") {
		t.Fatalf("the program's limits: %v", r)
	}
	var rep struct {
		Rlimits []struct{ Name string } `json:"rlimits"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var names []string
	for _, l := range rep.Rlimits {
		names = append(names, l.Name)
	}
	if !slices.Contains(names, "RLIMIT_DATA") || !slices.Contains(names, "RLIMIT_NPROC") {
		t.Errorf("report rlimits %v, want the fallbacks RLIMIT_DATA and RLIMIT_NPROC", names)
	}
}
