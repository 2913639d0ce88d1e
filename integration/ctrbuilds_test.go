package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestContainerBuilds: in a default container (Docker's seccomp profile,
// its 14 capabilities, a read-only cgroupfs: reproduced as in
// TestContainerMatrix), as root and as uid 1000, the built-in default with
// --allow-degraded runs go build and go test, npm ci --offline and pip
// install --target in the workspace (Landlock-only mode: their output
// lands at the workspace's top level), git reads the repository and is
// refused what would write .git, and stderr names every loss. These are
// the recipes of docs/containers.md.
func TestContainerBuilds(t *testing.T) {
	skipBuildsIfShort(t)
	isoNeedRoot(t)
	isoNeedTools(t, "unshare", "findmnt", "mount")
	cond := ctrCond{seccomp: true, caps: true, roCgroup: true}
	type build struct {
		name  string
		setUp func(t *testing.T, w *workspace) []string // the environment
		// script runs in the workspace; want is in its stdout or stderr.
		script, want string
	}
	builds := []build{
		{"go", func(t *testing.T, w *workspace) []string {
			writeGoModule(t, w, needTool(t, "go"))
			write(t, filepath.Join(w.root, "more.go"), "package main\n\nfunc init() { println(\"more\") }\n")
			return buildEnv(w, "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false")
		}, `go build -o app . && ./app && go test -count=1 ./...`, "hello from dep"},
		{"npm", func(t *testing.T, w *workspace) []string {
			npm := needTool(t, "npm")
			reg := startNpmRegistry(t)
			warm := filepath.Join(filepath.Dir(w.root), "warm")
			mustMkdir(t, warm)
			reg.writeNpmProject(t, warm)
			host(t, warm, buildEnv(w), npm, "ci")
			reg.writeNpmProject(t, w.root)
			return buildEnv(w)
		}, `npm ci --offline && node -e 'console.log(require("tinypkg"))'`, "hello from tinypkg"},
		{"pip", func(t *testing.T, w *workspace) []string {
			pipOK(t)
			writeWheel(t, filepath.Join(w.root, "wheels"), "tinywheel")
			return buildEnv(w, "PIP_DISABLE_PIP_VERSION_CHECK=1")
		}, `python3 -m pip install --no-index --find-links ./wheels --target ./deps tinywheel && PYTHONPATH=./deps python3 -c 'import tinywheel; print(tinywheel.GREETING)'`, "hello from tinywheel"},
		{"git", func(t *testing.T, w *workspace) []string {
			env := buildEnv(w, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
			host(t, w.root, env, needTool(t, "git"), "init", "-q")
			host(t, w.root, env, "git", "add", "src")
			host(t, w.root, env, "git", "commit", "-qm", "first")
			return env
		}, `echo new > new.txt && git status --short && git log --oneline | wc -l && if git add new.txt 2>/dev/null || git commit -qam second 2>/dev/null; then echo "git wrote .git"; else echo "git read, did not write"; fi`, "git read, did not write"},
	}
	for _, uid := range []int{0, ctrUID} {
		for _, b := range builds {
			user := "root"
			if uid != 0 {
				user = fmt.Sprintf("uid%d", uid)
			}
			t.Run(user+"/"+b.name, func(t *testing.T) {
				w := newWorkspace(t)
				env := b.setUp(t, w)
				head := ""
				if b.name == "git" {
					head = host(t, w.root, env, "git", "rev-parse", "HEAD")
				}
				if uid != 0 {
					for _, p := range []string{w.root, w.home} {
						if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", uid, uid), p).CombinedOutput(); err != nil {
							t.Fatalf("chown: %v %s", err, out)
						}
					}
				}
				via, venv := ctrVia(t, cond, uid)
				r := run(t, runOpts{env: append(env, venv...), dir: w.root, via: via, timeout: 240 * time.Second}, "--allow-degraded", "--", "sh", "-c", b.script)
				if r.code != 0 || !strings.Contains(r.stdout+r.stderr, b.want) {
					t.Fatalf("%s in a default container: %v", b.name, r)
				}
				for _, lost := range []string{ctrLostFS, ctrLostProc, `no cgroup`} {
					if !regexp.MustCompile(lost).MatchString(r.stderr) {
						t.Errorf("stderr does not name %q: %q", lost, r.stderr)
					}
				}
				if b.name == "git" {
					if !strings.Contains(r.stdout, "?? new.txt") {
						t.Errorf("git status did not see the new file: %v", r)
					}
					if now := host(t, w.root, env, "git", "-c", "safe.directory=*", "rev-parse", "HEAD"); now != head {
						t.Errorf("HEAD moved from %s to %s", head, now)
					}
				}
			})
		}
	}
}
