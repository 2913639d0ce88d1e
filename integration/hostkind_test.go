package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHostKind runs what VT Code sends most (workspace_write, no network,
// memory and pids limits) on this host, as root and as nobody, and checks
// that the run either refuses in one line or really holds its walls: a write
// outside the workspace and a read of a secret fail, a write inside works.
// It logs one HOSTKIND line per user: what the helper enforced here, taken
// from its own report. integration/vm/hostkinds.sh collects those lines from
// every guest into the README's table of host kinds (run with -v).
func TestHostKind(t *testing.T) {
	users := []isoUser{{name: "caller"}}
	if os.Geteuid() == 0 {
		users = append(users, isoNobody)
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			w := newWorkspace(t)
			chownTree(w, u)
			pol := wsPolicy(t, w.root)
			limits := `{"max_memory_mb":512,"max_pids":64}`
			args := []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol, "--resource-limits", limits}
			o := runOpts{env: w.env(), dir: w.root, cred: u.cred}
			// The helper itself, not the wrapper that adds
			// --allow-degraded on a kernel without Landlock.
			strictOpts := o
			strictOpts.bin = realBinary
			strict := run(t, strictOpts, append(args, "--", "/bin/true")...)
			refusal := ""
			switch strict.code {
			case 0:
			case 125:
				refusal = strings.TrimSpace(strict.stderr)
				if strings.Count(refusal, "\n") != 0 || !strings.HasPrefix(refusal, "sandbox-executable: ") {
					t.Fatalf("a refusal is one line: %v", strict)
				}
			default:
				t.Fatalf("without --allow-degraded: %v", strict)
			}
			report := filepath.Join(w.root, "report.json")
			script := fmt.Sprintf(`%s create %s; %s read %s; %s create %s`, probe, filepath.Join(w.out, "x"), probe,
				filepath.Join(w.home, ".ssh", "id_rsa"), probe, filepath.Join(w.root, "inside"))
			r := run(t, o, append(append(args, "--allow-degraded", "--report-file", report), "--", "/bin/sh", "-c", script)...)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 3 || !denied(firstWord(lines[0])) || !secretDenied(firstWord(lines[1])) || firstWord(lines[2]) != "ok" {
				t.Fatalf("the walls with --allow-degraded: %v", r)
			}
			logHostKind(t, "", u.name, report, refusal)
		})
	}
}

// logHostKind logs the HOSTKIND line of a run: kind names the host kind
// ("" for this host as it is), user who ran it, report the run's report
// (with --allow-degraded) and refusal the line the run without it refused
// with ("" when it ran).
func logHostKind(t *testing.T, kind, user, report, refusal string) {
	t.Helper()
	var rep struct {
		Enforcement struct {
			Filesystem struct{ Mode string } `json:"filesystem"`
			Landlock   *struct {
				ABI int `json:"abi"`
			} `json:"landlock"`
			Seccomp *struct {
				Rules int `json:"rules"`
			} `json:"seccomp"`
			Process *struct {
				Namespaces []string `json:"namespaces"`
			} `json:"process"`
		} `json:"enforcement"`
		Cgroup *struct {
			Mode string `json:"mode"`
		} `json:"cgroup"`
		Degradations []string `json:"degradations"`
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	row := map[string]any{
		"kind": kind, "kernel": unix.ByteSliceToString(uts.Release[:]), "arch": runtime.GOARCH, "user": user,
		"fs_mode": rep.Enforcement.Filesystem.Mode, "refusal": refusal, "degraded": rep.Degradations,
	}
	if l := rep.Enforcement.Landlock; l != nil {
		row["landlock_abi"] = l.ABI
	}
	if s := rep.Enforcement.Seccomp; s != nil {
		row["seccomp_rules"] = s.Rules
	}
	if p := rep.Enforcement.Process; p != nil {
		row["namespaces"] = p.Namespaces
	}
	if c := rep.Cgroup; c != nil {
		row["cgroup"] = c.Mode
	}
	line, _ := json.Marshal(row)
	t.Logf("HOSTKIND %s", line)
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}
