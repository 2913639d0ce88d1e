package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// limitsNoCgroup are resource limits that need no cgroup, for runs as an
// unprivileged user without a delegated one.
const limitsNoCgroup = `{"max_memory_mb":0,"max_pids":0,"max_disk_mb":0,"cpu_time_secs":0,"timeout_secs":60}`

// chownTree gives every file under each path to uid and gid.
func chownPaths(t *testing.T, uid, gid int, paths ...string) {
	t.Helper()
	for _, p := range paths {
		_ = filepath.Walk(p, func(q string, _ os.FileInfo, _ error) error { return os.Lchown(q, uid, gid) })
	}
}

// TestLateSecretsStayUnreadable: a denied path that does not exist when the
// sandbox starts (~/.netrc, and ~/.aws/credentials with no ~/.aws at all)
// and that appears while the program runs, created from outside 1 s after
// the program started, is never readable by it, in exact and Landlock-only
// mode, as root and as nobody; the rest of HOME stays readable.
func TestLateSecretsStayUnreadable(t *testing.T) {
	needLandlock(t)
	for _, u := range isoAnyUser(t) {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := newWorkspace(t)
				netrc, aws := filepath.Join(w.home, ".netrc"), filepath.Join(w.home, ".aws")
				if err := os.Remove(netrc); err != nil {
					t.Fatal(err)
				}
				if err := os.RemoveAll(aws); err != nil {
					t.Fatal(err)
				}
				if u.cred != nil {
					chownPaths(t, int(u.cred.Uid), int(u.cred.Gid), w.root)
				}
				mark := filepath.Join(w.root, "src", "started") // (Landlock-only mode narrows the root itself)
				// The program says it runs, waits (30 s at most) until both
				// secrets exist, then tries to read them, and a plain
				// file of HOME.
				script := `: > "$0"; i=0
while { [ ! -e "$1" ] || [ ! -e "$2" ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
[ -e "$1" ] && [ -e "$2" ] && echo appeared
cat "$1" "$2" 2>&1; "$4" read "$1"; "$4" read "$2"; cat "$3"`
				args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root), "--resource-limits", limitsNoCgroup}, fsOpts(t, mode)...)
				args = append(args, "--", "/bin/sh", "-c", script, mark, netrc, filepath.Join(aws, "credentials"), filepath.Join(w.home, "docs", "notes.txt"), probe)
				p := isoStart(t, w, u, nil, args)
				// Created from outside 1 s after the program started.
				for i := 0; i < 400; i++ {
					if _, err := os.Stat(mark); err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				time.Sleep(time.Second)
				write(t, netrc, "machine late password LATE-NETRC\n")
				mustMkdir(t, aws)
				write(t, filepath.Join(aws, "credentials"), "LATE-AWS-SECRET\n")
				if !p.wait(60 * time.Second) {
					t.Fatalf("the run did not end within 60 s: %s", p.output())
				}
				b, _ := os.ReadFile(p.stdout)
				out := string(b)
				if p.code != 0 {
					t.Fatalf("run: exit %d: %s", p.code, p.output())
				}
				if !strings.Contains(out, "appeared") {
					t.Fatalf("the program never saw the secrets appear: %s", p.output())
				}
				if strings.Contains(out, "LATE-NETRC") || strings.Contains(out, "LATE-AWS-SECRET") {
					t.Errorf("a secret created during the run was read: %q", out)
				}
				if !strings.Contains(out, "readable notes") {
					t.Errorf("the rest of HOME is not readable: %s", p.output())
				}
			})
		}
	}
}

// TestReplacedSecretStaysUnreadable: a denied file replaced from outside
// while the program runs (a temporary file renamed over it, as editors and
// `npm login` write a file) is never readable by it. In exact mode the
// mask covers the directory entry it was mounted on, not the new one, so
// Landlock keeps the name unreadable even when every denied path exists
// (nothing late). Both modes, as root and as nobody.
func TestReplacedSecretStaysUnreadable(t *testing.T) {
	needLandlock(t)
	for _, u := range isoAnyUser(t) {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := newWorkspace(t)
				token := filepath.Join(w.home, "token.txt")
				write(t, token, "OLD-TOKEN\n")
				if u.cred != nil {
					chownPaths(t, int(u.cred.Uid), int(u.cred.Gid), w.root)
				}
				pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
					"sensitive_paths": []map[string]string{{"path": token}}, "exclude_slash_tmp": true, "exclude_tmpdir_env_var": true})
				mark, flag := filepath.Join(w.root, "src", "started"), filepath.Join(w.root, "src", "replaced")
				// The program says it runs, waits (30 s at most) until the
				// token was replaced, then tries to read it.
				script := `: > "$0"; i=0
while [ ! -e "$2" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
[ -e "$2" ] && echo replaced
cat "$1" 2>&1; "$3" read "$1"`
				args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol, "--resource-limits", limitsNoCgroup}, fsOpts(t, mode)...)
				args = append(args, "--", "/bin/sh", "-c", script, mark, token, flag, probe)
				p := isoStart(t, w, u, nil, args)
				for i := 0; i < 400; i++ {
					if _, err := os.Stat(mark); err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				tmp := token + ".tmp"
				write(t, tmp, "NEW-TOKEN\n")
				if err := os.Rename(tmp, token); err != nil {
					t.Fatal(err)
				}
				write(t, flag, "")
				if !p.wait(60 * time.Second) {
					t.Fatalf("the run did not end within 60 s: %s", p.output())
				}
				b, _ := os.ReadFile(p.stdout)
				out := string(b)
				if !strings.Contains(out, "replaced") {
					t.Fatalf("the program never saw the token replaced: %s", p.output())
				}
				if strings.Contains(out, "OLD-TOKEN") || strings.Contains(out, "NEW-TOKEN") {
					t.Errorf("the denied file was read: %q", out)
				}
			})
		}
	}
}

// TestLateSecretsNarrowingReported: exact mode reports the directories it
// narrows for denied paths that do not exist yet.
func TestLateSecretsNarrowingReported(t *testing.T) {
	needLandlock(t)
	w := newWorkspace(t)
	if err := os.Remove(filepath.Join(w.home, ".netrc")); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--explain", "--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root)}, fsOpts(t, "exact")...)
	r := run(t, runOpts{env: w.env(), dir: w.root}, args...)
	if !strings.Contains(r.stdout, `"dir": "`+w.home+`"`) || !strings.Contains(r.stdout, "created in it after the start cannot be read") {
		t.Errorf("the narrowing of %s is not reported: %s", w.home, r.stdout)
	}
}
