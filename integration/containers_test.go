package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbox-executable/integration/dockerlike"
)

// A container's conditions, reproduced around the helper without Docker
// (integration/dockerlike, docs/containers.md).
type ctrCond struct {
	seccomp  bool // Docker's default seccomp profile, rendered for its default caps
	caps     bool // only Docker's 14 default capabilities
	roCgroup bool // /sys/fs/cgroup read-only (a private mount namespace of the test)
	// maskedProc covers /proc/kcore, /proc/keys, ... and makes /proc/sys
	// read-only, as Docker masks /proc (unless
	// --security-opt systempaths=unconfined): no procfs can then be mounted
	// in a user namespace. Not part of "all" (the seccomp filter refuses
	// namespaces before that matters).
	maskedProc bool
	// capAdd is added to the capabilities and to the profile's rendering
	// (docker run --cap-add).
	capAdd string
}

func (c ctrCond) String() string {
	var s []string
	if c.seccomp {
		s = append(s, "seccomp")
	}
	if c.caps {
		s = append(s, "caps")
	}
	if c.roCgroup {
		s = append(s, "ro-cgroup")
	}
	if len(s) == 3 {
		s = []string{"all"}
	}
	if c.maskedProc {
		s = append(s, "masked-proc")
	}
	if c.capAdd != "" {
		s = append(s, "add-"+c.capAdd)
	}
	return strings.Join(s, "+")
}

// ctrVia is the launcher chain that puts the helper under c, as uid: for a
// read-only cgroupfs, unshare(1) makes a private mount namespace in which
// every mount under /sys/fs/cgroup is remounted read-only (the host's are
// untouched); then this test binary, as dockerlike's launcher, loads the
// filter, drops the capabilities and switches the user.
func ctrVia(t *testing.T, c ctrCond, uid int) (via, env []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var script []string
	if c.roCgroup {
		script = append(script, `for m in $(findmnt -R -n -r -o TARGET /sys/fs/cgroup); do mount -o remount,bind,ro "$m" || exit 121; done`)
	}
	if c.maskedProc {
		// As Docker's default masked and read-only paths.
		script = append(script, `n=0; for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug; do [ -f "$f" ] || continue; mount --bind /dev/null "$f" || exit 122; n=$((n+1)); done; [ $n -gt 0 ] || exit 122; mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys || exit 122`)
	}
	if len(script) > 0 {
		via = []string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
			strings.Join(script, "; ") + `; exec "$@"`, "sh"}
	}
	via = append(via, self)
	env = []string{dockerlike.EnvLaunch + "=1"}
	if c.seccomp {
		env = append(env, dockerlike.EnvSeccomp+"=1")
	}
	if c.caps {
		env = append(env, dockerlike.EnvCaps+"=1")
	}
	if uid != 0 {
		env = append(env, fmt.Sprintf("%s=%d", dockerlike.EnvUID, uid))
	}
	if c.capAdd != "" {
		env = append(env, dockerlike.EnvCapAdd+"="+c.capAdd)
	}
	return via, env
}

// ctrUID is the container's non-root user, as `docker run --user 1000`.
const ctrUID = 1000

// ctrExpect is what a cell of the matrix gives.
type ctrExpect struct {
	// strict: without --allow-degraded. "" runs (exact mode), else the
	// refusal line must match this.
	strict string
	// mode is the filesystem mode with --allow-degraded, and degraded the
	// degradations that run must name (each a pattern), in stderr and in
	// the report.
	mode     string
	degraded []string
	// alt is what the cell gives where the kernel allows what strict
	// refuses (a procfs over a masked /proc: Linux 6.1 mounts it read-only
	// in a user namespace, 6.18 does not); either way the trial and the
	// run agree, which is what the cell checks.
	alt *ctrExpect
}

// Patterns of the lines the cells expect.
const (
	ctrNoNS       = `^sandbox-executable: refusing to run: no namespaces: clone\(CLONE_NEW\{(USER,)?NS,PID,IPC,UTS,CGROUP\}\): EPERM under this process's seccomp filter \(a container's\)`
	ctrFixRoot    = `--cap-add SYS_ADMIN --security-opt apparmor=unconfined`
	ctrFixUser    = `--security-opt seccomp=unconfined`
	ctrMaskedProc = `^sandbox-executable: refusing to run: no namespaces: private /proc: EPERM \(a container's masked /proc, or an LSM\); run the container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined`
	ctrLostFS     = `no mount namespace`
	ctrLostProc   = `no PID, IPC or UTS namespace`
	ctrLostCgRoot = `no cgroup .*max_pids is not enforced at all`
	ctrLostCgUser = `no cgroup .*RLIMIT_NPROC`
	ctrCgroupRO   = `^sandbox-executable: refusing to run: no cgroup for the memory, pids and CPU limits of the whole tree \(/sys/fs/cgroup is read-only here \(a container's\)\); run the container with a writable cgroup v2 of its own \(docker run --cgroupns=private`
	ctrCgroupUser = `no cgroup for the memory, pids and CPU limits`
)

// ctrMatrix is every cell: root and the non-root user, under each
// condition alone and all together.
func ctrMatrix() []struct {
	uid    int
	cond   ctrCond
	expect ctrExpect
} {
	type cell = struct {
		uid    int
		cond   ctrCond
		expect ctrExpect
	}
	noNSRoot := ctrExpect{strict: ctrNoNS + `; run the container with ` + ctrFixRoot + `.*, or pass --allow-degraded for Landlock-only mode$`, mode: "landlock", degraded: []string{ctrLostFS, ctrLostProc}}
	noNSUser := ctrExpect{strict: ctrNoNS + `; run the container with ` + ctrFixUser + `.*, or pass --allow-degraded for Landlock-only mode$`, mode: "landlock", degraded: []string{ctrLostFS, ctrLostProc, ctrLostCgUser}}
	return []cell{
		{0, ctrCond{seccomp: true}, noNSRoot},
		{0, ctrCond{caps: true}, ctrExpect{mode: "exact"}},
		{0, ctrCond{roCgroup: true}, ctrExpect{strict: ctrCgroupRO, mode: "exact", degraded: []string{ctrLostCgRoot}}},
		{0, ctrCond{seccomp: true, caps: true, roCgroup: true}, ctrExpect{strict: noNSRoot.strict, mode: "landlock",
			degraded: []string{ctrLostFS, ctrLostProc, ctrLostCgRoot}}},
		{ctrUID, ctrCond{seccomp: true}, noNSUser},
		{ctrUID, ctrCond{caps: true}, ctrExpect{strict: ctrCgroupUser, mode: "exact", degraded: []string{ctrLostCgUser}}},
		{ctrUID, ctrCond{roCgroup: true}, ctrExpect{strict: ctrCgroupRO, mode: "exact", degraded: []string{ctrLostCgUser}}},
		{ctrUID, ctrCond{seccomp: true, caps: true, roCgroup: true}, noNSUser},
		// Found only by trying: namespaces are allowed, a procfs is not.
		{0, ctrCond{caps: true, maskedProc: true}, ctrExpect{strict: ctrMaskedProc + `.*, or pass --allow-degraded for Landlock-only mode$`,
			mode: "landlock", degraded: []string{ctrLostFS, ctrLostProc}, alt: &ctrExpect{mode: "exact"}}},
		{ctrUID, ctrCond{maskedProc: true}, ctrExpect{strict: ctrMaskedProc + `.*, or pass --allow-degraded for Landlock-only mode$`,
			mode: "landlock", degraded: []string{ctrLostFS, ctrLostProc, ctrLostCgUser},
			alt: &ctrExpect{strict: ctrCgroupUser, mode: "exact", degraded: []string{ctrLostCgUser}}}},
		{0, ctrCond{maskedProc: true}, ctrExpect{mode: "exact"}},
		// The setting the refusals name for a container's root: the
		// profile then allows the namespaces, and the masked /proc does
		// not matter without a user namespace.
		{0, ctrCond{seccomp: true, caps: true, roCgroup: true, maskedProc: true, capAdd: "CAP_SYS_ADMIN"},
			ctrExpect{strict: ctrCgroupRO, mode: "exact", degraded: []string{ctrLostCgRoot}}},
	}
}

// TestContainerMatrix runs the helper under a container's conditions,
// reproduced here (see ctrVia), as root and as a non-root user, each
// condition alone and all together, without and with --allow-degraded.
// Each cell checks what really happens: the refusal line (one line, naming
// the container setting that unlocks the full model), or the run: its exit
// status, a write inside the root that lands, a write outside that is
// denied, the filesystem mode and every degradation named, on stderr and
// in the report. Docker itself is not needed.
func TestContainerMatrix(t *testing.T) {
	isoNeedRoot(t)
	isoNeedTools(t, "unshare", "findmnt", "mount")
	// In the VM guests (-short) the cells whose answer depends on the
	// kernel or the cgroup layout; the host runs them all.
	short := map[string]bool{"root/all": true, "uid1000/all": true, "uid1000/ro-cgroup": true, "root/ro-cgroup": true,
		"root/caps+masked-proc": true, "uid1000/masked-proc": true}
	for _, c := range ctrMatrix() {
		user := "root"
		if c.uid != 0 {
			user = fmt.Sprintf("uid%d", c.uid)
		}
		name := user + "/" + c.cond.String()
		if testing.Short() && !short[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			u := isoRoot
			if c.uid != 0 {
				u = isoUser{name: user, cred: &syscall.Credential{Uid: uint32(c.uid), Gid: uint32(c.uid)}}
			}
			w := isoWorkspace(t, u)
			via, env := ctrVia(t, c.cond, c.uid)
			outside := filepath.Join(w.out, "written")
			// In a subdirectory: the cell checks the boundary; what
			// Landlock-only mode's top level does is TestLandlockOnlyTopLevel's.
			sub := filepath.Join(w.root, "sub")
			mustMkdir(t, sub)
			if u.cred != nil {
				_ = os.Chown(sub, int(u.cred.Uid), int(u.cred.Gid))
			}
			inside := filepath.Join(sub, "written")
			script := `echo in > "$1" || exit 90; echo out > "$2" && exit 91; exit 7`
			e := c.expect
			refusal := ""
			for _, degraded := range []bool{false, true} {
				rep := filepath.Join(w.out, fmt.Sprintf("report-%v.json", degraded))
				args := []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root),
					"--resource-limits", limits(512, 64, 60, 120), "--report-file", rep}
				if degraded {
					args = append(args, "--allow-degraded")
				}
				args = append(args, "--", "/bin/sh", "-c", script, "sh", inside, outside)
				_ = os.Remove(inside)
				r := run(t, runOpts{env: isoEnv(w, env...), dir: w.root, via: via}, args...)
				if _, err := os.Stat(outside); err == nil {
					t.Fatalf("degraded=%v: the write outside the root landed: %v", degraded, r)
				}
				if !degraded && e.alt != nil && !regexp.MustCompile(e.strict).MatchString(strings.TrimSuffix(r.stderr, "\n")) {
					t.Logf("this kernel allows what the cell's first expectation refuses: %v", r)
					e = *e.alt
				}
				if !degraded && e.strict != "" {
					refusal = strings.TrimSpace(r.stderr)
					ctrCheckRefusal(t, r, e.strict)
					if _, err := os.Stat(inside); err == nil {
						t.Fatalf("refused, yet the program ran: %v", r)
					}
					continue
				}
				if r.code != 7 {
					t.Errorf("degraded=%v: exit %d, want 7 (the write outside refused, the one inside done): %v", degraded, r.code, r)
					continue
				}
				if b, err := os.ReadFile(inside); err != nil || string(b) != "in\n" {
					t.Errorf("degraded=%v: the write inside the root: %q %v", degraded, b, err)
					continue
				}
				ctrCheckRun(t, r, rep, e, degraded)
				if degraded {
					logHostKind(t, "container: "+c.cond.String(), user, rep, refusal)
				}
			}
		})
	}
}

func ctrCheckRefusal(t *testing.T, r result, pattern string) {
	t.Helper()
	if r.code != 125 {
		t.Errorf("exit %d, want 125 (refused): %v", r.code, r)
		return
	}
	line := strings.TrimSuffix(r.stderr, "\n")
	if strings.Contains(line, "\n") || line == "" {
		t.Errorf("the refusal is not one line: %q", r.stderr)
	}
	if !regexp.MustCompile(pattern).MatchString(line) {
		t.Errorf("refusal %q\ndoes not match %q", line, pattern)
	}
	// In a container, a host's remedies and the helper's own paths help
	// nobody.
	for _, bad := range []string{"run as root", "systemd-run", "/sys/fs/cgroup/unified/", "/sys/fs/cgroup/pids/"} {
		if strings.Contains(pattern, "container") && strings.Contains(line, bad) {
			t.Errorf("the refusal names %q, which does not help in a container: %q", bad, line)
		}
	}
	if len(line) > 440 {
		t.Errorf("the refusal is %d characters long: %q", len(line), line)
	}
}

func ctrCheckRun(t *testing.T, r result, rep string, e ctrExpect, degraded bool) {
	t.Helper()
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatalf("no report: %v (%v)", err, r)
	}
	var doc struct {
		Degradations []string `json:"degradations"`
		Enforcement  struct {
			Filesystem struct {
				Mode string `json:"mode"`
			} `json:"filesystem"`
		} `json:"enforcement"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if doc.Enforcement.Filesystem.Mode != e.mode {
		t.Errorf("degraded=%v: filesystem mode %q, want %q", degraded, doc.Enforcement.Filesystem.Mode, e.mode)
	}
	for _, want := range e.degraded {
		re := regexp.MustCompile(want)
		found := false
		for _, d := range doc.Degradations {
			found = found || re.MatchString(d)
		}
		if !found {
			t.Errorf("degraded=%v: no degradation matches %q in the report: %q", degraded, want, doc.Degradations)
		}
		if !re.MatchString(r.stderr) {
			t.Errorf("degraded=%v: stderr does not name %q: %q", degraded, want, r.stderr)
		}
	}
	if len(e.degraded) == 0 && len(doc.Degradations) > 0 {
		t.Errorf("degraded=%v: degradations where none were expected: %q", degraded, doc.Degradations)
	}
}

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
