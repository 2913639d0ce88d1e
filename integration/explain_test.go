package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestExplainIsWhatRuns: --explain prints the decisions the run then
// carries out: for the same arguments, its enforcement, rlimits and
// degradations are the report's of a real run, field for field, but for
// where the seccomp program came from (the filter cache: another run may
// store the entry in between; --explain only reads it).
func TestExplainIsWhatRuns(t *testing.T) {
	w := newWorkspace(t)
	allow := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
		"network_access": true, "network_allowlist": []map[string]any{{"domain": "example.com", "port": 443, "protocol": "tcp"}},
		"seccomp_profile": map[string]any{"allow_network_sockets": true}})
	for _, c := range []struct {
		name string
		args []string
	}{
		{"read_only", []string{"--sandbox-policy", roPolicy}},
		{"workspace_write with limits", []string{"--sandbox-policy", wsPolicy(t, w.root), "--resource-limits", `{"max_memory_mb":512,"max_pids":64,"max_disk_mb":16}`}},
		{"allowlist", []string{"--sandbox-policy", allow}},
		{"landlock mode", append([]string{"--sandbox-policy", wsPolicy(t, w.root)}, fsOpts(t, "landlock")...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--sandbox-policy-cwd", w.root}, c.args...)
			// The Landlock rules of a narrowed directory are one per entry
			// at the moment of deciding: an entry another test's guardian
			// removes meanwhile (a killed run's temp dir) changes the
			// count between the two. A real divergence shows every time:
			// a second try must agree.
			diff := explainAndRun(t, w, args, c.name+"-1")
			if diff != "" {
				t.Logf("first try: %s; trying again", diff)
				diff = explainAndRun(t, w, args, c.name+"-2")
			}
			if diff != "" {
				t.Error(diff)
			}
		})
	}
}

// explainAndRun runs --explain, then the same run with a report, and says
// how the two differ ("" when they agree).
func explainAndRun(t *testing.T, w *workspace, args []string, name string) string {
	t.Helper()
	o := runOpts{env: w.env(), dir: w.root}
	ex := run(t, o, append(args, "--explain", "--", "/bin/true")...)
	if ex.code != 0 {
		t.Fatalf("--explain: %v", ex)
	}
	report := filepath.Join(w.out, "report-"+strings.ReplaceAll(name, " ", "-")+".json")
	if r := run(t, o, append(args, "--report-file", report, "--", "/bin/true")...); r.code != 0 {
		t.Fatalf("run: %v", r)
	}
	var explained, ran map[string]any
	if err := json.Unmarshal([]byte(ex.stdout), &explained); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ran); err != nil {
		t.Fatal(err)
	}
	for _, m := range []map[string]any{explained, ran} {
		if sc, ok := m["enforcement"].(map[string]any)["seccomp"].(map[string]any); ok {
			delete(sc, "cache")
			delete(sc, "cache_rejected")
		} else {
			t.Fatalf("no enforcement.seccomp in %v", m)
		}
	}
	var diffs []string
	for _, k := range []string{"enforcement", "rlimits", "degradations"} {
		e, r := explained[k], ran[k]
		if k == "degradations" && e == nil {
			e = []any{} // omitted when empty in --explain
		}
		if !reflect.DeepEqual(e, r) {
			je, _ := json.MarshalIndent(e, "", " ")
			jr, _ := json.MarshalIndent(r, "", " ")
			diffs = append(diffs, fmt.Sprintf("%s differs:\n--explain: %s\nreport:    %s", k, je, jr))
		}
	}
	return strings.Join(diffs, "\n")
}

// TestExplainWritesNothing: --explain makes no state directory, no key, no
// cached filter and no temp dir; the same run without --explain makes the
// state directory (so the check can fail). It runs in a mount namespace of
// its own with a fresh /run, where root's state directory goes.
func TestExplainWritesNothing(t *testing.T) {
	isoNeedRoot(t)
	isoNeedTools(t, "unshare", "mount", "find")
	w := newWorkspace(t)
	tmp := filepath.Join(w.out, "tmpdir")
	mustMkdir(t, tmp)
	script := `mount -t tmpfs none /run && "$0" "$@"; rc=$?; find /run "$TMPDIR" -mindepth 1; exit $rc`
	via := []string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script}
	o := runOpts{env: append(w.env(), "TMPDIR="+tmp), dir: w.root, via: via}
	args := []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root)}
	r := run(t, o, append(args, "--explain", "--", "/bin/true")...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "{") {
		t.Fatalf("--explain: %v", r)
	}
	if i := strings.LastIndex(r.stdout, "}\n"); strings.TrimSpace(r.stdout[i+2:]) != "" {
		t.Errorf("--explain wrote: %s", r.stdout[i+2:])
	}
	r = run(t, o, append(args, "--", "/bin/true")...)
	if r.code != 0 || !strings.Contains(r.stdout, "/run/sandbox-executable") {
		t.Errorf("a run made no state directory, so the check above proves nothing: %v", r)
	}
}
