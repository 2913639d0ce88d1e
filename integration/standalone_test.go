package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The standalone form (no --sandbox-policy): the built-in default sized
// for real builds, its composing flags, the settings files, and the line
// that says why a limit ended a run.

// explainJSON runs --explain with args in dir and decodes it.
func explainJSON(t *testing.T, o runOpts, args ...string) map[string]any {
	t.Helper()
	r := run(t, o, append(args, "--explain")...)
	if r.code != 0 {
		t.Fatalf("--explain %v: %v", args, r)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("--explain: %v\n%s", err, r.stdout)
	}
	return m
}

// field walks a decoded JSON document along keys.
func field(m any, keys ...string) any {
	for _, k := range keys {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

// writeParallelModule makes dir a Go module of a main package importing
// n small packages, each of which changes on every call (so that a build
// compiles all of them at once), and warms the standard library's build
// cache under home on the host.
func writeParallelModule(t *testing.T, goTool, dir, home string, n int, salt string) {
	t.Helper()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/par\n\ngo 1.21\n")
	var imports strings.Builder
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("p%d", i))
		mustMkdir(t, p)
		write(t, filepath.Join(p, "p.go"), fmt.Sprintf("package p%d\n\nimport \"strings\"\n\n// X changes with every test run.\nconst X = %q\n\n// F repeats s.\nfunc F(s string) string { return strings.Repeat(s, 3) + X }\n", i, salt))
		fmt.Fprintf(&imports, "\t_ \"example.com/par/p%d\"\n", i)
	}
	write(t, filepath.Join(dir, "main.go"), "package main\n\nimport (\n"+imports.String()+")\n\nfunc main() { println(\"built\") }\n")
}

// TestDefaultParallelGoBuild: go build -p 16 with GOMAXPROCS=16 (16
// compilers at once, each with its threads: every thread counts against
// the pids limit) succeeds under the built-in default; 64 pids did not.
func TestDefaultParallelGoBuild(t *testing.T) {
	skipBuildsIfShort(t)
	goTool := needTool(t, "go")
	w := newWorkspace(t)
	env := buildEnv(w, "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false")
	writeParallelModule(t, goTool, w.root, w.home, 32, "warm")
	host(t, w.root, env, goTool, "build", "-o", os.DevNull, ".")
	writeParallelModule(t, goTool, w.root, w.home, 32, t.Name())
	r := inDefault(t, w, append(env, "GOMAXPROCS=16"), "go", "build", "-p", "16", "-o", "app", ".")
	if r.code != 0 {
		t.Fatalf("go build -p 16 with GOMAXPROCS=16 in the default: %v", r)
	}
	if out, err := exec.Command(filepath.Join(w.root, "app")).CombinedOutput(); err != nil || !strings.Contains(string(out), "built") {
		t.Errorf("the built program: %v %s", err, out)
	}
}

// TestDefaultFreshHome: with a HOME that has no caches at all (a new
// machine, CI), go build and npm's cache work in the default: each tool
// gets an empty cache of the run's own instead of failing to make one in
// the read-only home; nothing is made in the home.
func TestDefaultFreshHome(t *testing.T) {
	skipBuildsIfShort(t)
	goTool := needTool(t, "go")
	w := newWorkspace(t)
	write(t, filepath.Join(w.root, "go.mod"), "module example.com/fresh\n\ngo 1.21\n")
	write(t, filepath.Join(w.root, "main.go"), "package main\n\nfunc main() { println(\"fresh\") }\n")
	env := buildEnv(w, "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false")
	r := inDefault(t, w, env, goTool, "build", "-o", "app", ".")
	if r.code != 0 {
		t.Fatalf("go build with a fresh HOME: %v", r)
	}
	for _, p := range []string{".cache", "go"} {
		if _, err := os.Lstat(filepath.Join(w.home, p)); err == nil {
			t.Errorf("the run made %s in the home", p)
		}
	}
	m := explainJSON(t, runOpts{env: env, dir: w.root})
	if fresh := fmt.Sprint(field(m, "enforcement", "filesystem", "fresh_caches")); !strings.Contains(fresh, "GOCACHE=") {
		t.Errorf("fresh_caches: %s", fresh)
	}
}

// TestDefaultLoopbackServer: a test that starts a local HTTP server
// (httptest.NewServer) passes in the default, whose network is its own
// namespace's loopback; a connection outside fails.
func TestDefaultLoopbackServer(t *testing.T) {
	skipBuildsIfShort(t)
	goTool := needTool(t, "go")
	w := newWorkspace(t)
	write(t, filepath.Join(w.root, "go.mod"), "module example.com/srv\n\ngo 1.21\n")
	write(t, filepath.Join(w.root, "srv_test.go"), `package srv

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestServer(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") }))
	defer s.Close()
	res, err := http.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	if string(b) != "pong" {
		t.Fatalf("%q", b)
	}
	if c, err := net.DialTimeout("tcp", "192.0.2.1:80", 2*time.Second); err == nil {
		c.Close()
		t.Fatal("reached a host outside the loopback")
	}
}
`)
	// The test process's own build cache holds net/http already: the
	// run reads it through its scratch overlay and writes nothing to it.
	gocache, err := exec.Command(goTool, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := buildEnv(w, "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false", "GOCACHE="+strings.TrimSpace(string(gocache)))
	host(t, w.root, env, goTool, "test", "-count=1", "-run", "^$", ".") // warms the build cache, runs nothing
	r := inDefault(t, w, env, goTool, "test", "-count=1", ".")
	if r.code != 0 || !strings.Contains(r.stdout, "ok") {
		t.Fatalf("go test with a local server in the default: %v", r)
	}
}

// TestTmpdirFullIsENOSPC: filling the private TMPDIR fails with ENOSPC:
// its tmpfs is at most half the memory limit its pages are charged to, so
// a run that fills it is not OOM-killed.
func TestTmpdirFullIsENOSPC(t *testing.T) {
	w := newWorkspace(t)
	pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
		"exclude_slash_tmp": true, "exclude_tmpdir_env_var": true,
		"resource_limits": map[string]int{"max_memory_mb": 256, "max_pids": 64, "max_disk_mb": 1024, "cpu_time_secs": 60, "timeout_secs": 60}})
	r := w.sandbox(t, pol, nil, "/bin/sh", "-c", `head -c 300000000 /dev/zero > "$TMPDIR/big"; echo "head exited $?"`)
	if r.code != 0 || !strings.Contains(r.stderr, "No space left on device") || !strings.Contains(r.stdout, "head exited 1") {
		t.Fatalf("filling the private TMPDIR: %v", r)
	}
}

// TestEndingsSaid: a run a limit ended says so on stderr in one line,
// naming the limit, its value and the flag that raises it; --quiet keeps
// it quiet, and VT Code's form (a --sandbox-policy) says it only with
// --explain-endings.
func TestEndingsSaid(t *testing.T) {
	w := newWorkspace(t)
	o := runOpts{env: w.env(), dir: w.root}
	for _, c := range []struct {
		name string
		args []string
		code int
		line string
	}{
		{"timeout", []string{"--timeout", "1", "--", "sleep", "30"}, 124, "sandbox-executable: ended by the wall-clock timeout: 1 s passed (exit 124; --timeout raises it)\n"},
		{"cpu", []string{"--cpu", "1", "--", "sh", "-c", "while :; do :; done"}, 152, "s of CPU time"},
		{"memory", []string{"--memory", "64M", "--", "tail", "/dev/zero"}, 137, "sandbox-executable: ended by the memory limit: the process tree reached 64 MB and was killed (exit 137; --memory raises it)\n"},
		{"pids", []string{"--pids", "16", "--", "sh", "-c", "for i in $(seq 40); do sleep 2 & done; wait"}, 2, "sandbox-executable: the pids limit of 16 tasks (processes and threads together) refused a fork or a new thread"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, o, c.args...)
			lines := strings.Count(r.stderr, "sandbox-executable: ")
			if r.code != c.code || !strings.Contains(r.stderr, c.line) || lines != 1 {
				t.Errorf("%v", r)
			}
			if c.name == "cpu" && !strings.Contains(r.stderr, "--cpu raises it") {
				t.Errorf("%v", r)
			}
			if c.name == "pids" && !strings.Contains(r.stderr, "--pids raises it") {
				t.Errorf("%v", r)
			}
		})
	}
	if r := run(t, o, "--quiet", "--timeout", "1", "--", "sleep", "30"); r.code != 124 || r.stderr != "" {
		t.Errorf("--quiet: %v", r)
	}
	pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
		"resource_limits": map[string]int{"max_memory_mb": 512, "max_pids": 64, "max_disk_mb": 0, "cpu_time_secs": 60, "timeout_secs": 1}})
	if r := w.sandbox(t, pol, nil, "sleep", "30"); r.code != 124 || r.stderr != "" {
		t.Errorf("VT Code's form: %v", r)
	}
	if r := w.sandbox(t, pol, []string{"--explain-endings"}, "sleep", "30"); r.code != 124 ||
		r.stderr != "sandbox-executable: ended by the wall-clock timeout: 1 s passed (exit 124; the policy's resource_limits.timeout_secs sets it)\n" {
		t.Errorf("VT Code's form with --explain-endings: %v", r)
	}
}

// TestComposedFlags: each flag is a change to the built-in default that a
// real run shows, --explain shows it with where it came from, and with a
// --sandbox-policy only the narrowing ones compose.
func TestComposedFlags(t *testing.T) {
	w := newWorkspace(t)
	o := runOpts{env: w.env(), dir: w.root}
	vendor := filepath.Join(w.root, "vendor")
	mustMkdir(t, vendor)
	write(t, filepath.Join(w.out, "public"), "public\n")
	r := run(t, o, "--rw", w.out, "--ro", "vendor", "--hide", filepath.Join(w.out, "public"), "--", "/bin/sh", "-c",
		"echo a > "+w.out+"/new && echo wrote-outside; echo b > vendor/x || echo vendor-read-only; cat "+w.out+"/public || echo hidden")
	if !strings.Contains(r.stdout, "wrote-outside") || !strings.Contains(r.stdout, "vendor-read-only") || !strings.Contains(r.stdout, "hidden") || strings.Contains(r.stdout, "public\n") {
		t.Errorf("--rw, --ro, --hide: %v", r)
	}
	if _, err := os.Lstat(filepath.Join(vendor, "x")); err == nil {
		t.Error("--ro vendor: written")
	}
	if r := run(t, o, "--net", "none", "--", probe, "socket", "inet"); probeResult(r) != "EPERM" {
		t.Errorf("--net none: %v", r)
	}
	m := explainJSON(t, o, "--rw", w.out, "--net", "allow:example.com,proxy.golang.org:8443", "--timeout", "20m", "--memory", "2G", "--pids", "8192", "--cpu", "1h")
	if got := fmt.Sprint(field(m, "plan", "limits")); !strings.Contains(got, "memory_bytes:2.147483648e+09") || !strings.Contains(got, "pids:8192") ||
		!strings.Contains(got, "cpu_seconds:3600") || !strings.Contains(got, "timeout_seconds:1200") {
		t.Errorf("limits: %s", got)
	}
	if got := fmt.Sprint(field(m, "plan", "network")); !strings.Contains(got, "mode:allowlist") || !strings.Contains(got, "proxy.golang.org port:8443") {
		t.Errorf("network: %s", got)
	}
	if got := fmt.Sprint(field(m, "plan", "filesystem", "writable_roots")); !strings.Contains(got, "source:--rw") {
		t.Errorf("roots: %s", got)
	}
	// A partial --resource-limits keeps the default's other limits.
	m = explainJSON(t, o, "--resource-limits", `{"timeout_secs":2}`)
	if got := fmt.Sprint(field(m, "plan", "limits")); !strings.Contains(got, "timeout_seconds:2") || strings.Contains(got, "pids:0") || strings.Contains(got, "memory_bytes:0") {
		t.Errorf("a partial --resource-limits: %s", got)
	}
	// With a policy: the widening flags are refused, the narrowing ones
	// compose.
	for _, args := range [][]string{{"--rw", w.out}, {"--net", "loopback"}, {"--memory", "4G"}, {"--persist-cache"}} {
		r := w.sandbox(t, roPolicy, args, "/bin/true")
		if r.code != 125 || !strings.HasPrefix(r.stderr, "sandbox-executable: "+args[0]) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v with a policy: %v", args, r)
		}
	}
	if r := w.sandbox(t, roPolicy, []string{"--hide", filepath.Join(w.out, "public"), "--memory", "100M"}, "cat", filepath.Join(w.out, "public")); r.code == 0 {
		t.Errorf("--hide with a policy: %v", r)
	}
	// A hand-written policy asking for network without the seccomp
	// profile that allows it is refused, not silently given none.
	netPol := `{"type":"workspace_write","writable_roots":[],"network_access":true}`
	if r := w.sandbox(t, netPol, nil, "/bin/true"); r.code != 125 || !strings.Contains(r.stderr, `"seccomp_profile":{"allow_network_sockets":true}`) {
		t.Errorf("network without a seccomp profile: %v", r)
	}
}

// TestRwAroundASecretKeepsItDenied: --rw or --ro of a directory that holds
// a secret the default hides (HOME, or its parent, holding ~/.ssh) does
// not give the secret up: only naming the secret itself does. Both
// filesystem modes.
func TestRwAroundASecretKeepsItDenied(t *testing.T) {
	w := newWorkspace(t)
	o := runOpts{env: w.env(), dir: w.root}
	around := filepath.Dir(w.home)
	key := filepath.Join(w.home, ".ssh", "id_rsa")
	for _, mode := range fsModes {
		for _, flag := range [][]string{{"--rw", around}, {"--rw", w.home}, {"--ro", w.home}} {
			r := run(t, o, append(fsOpts(t, mode), append(flag, "--", "/bin/sh", "-c", "cat "+key+" || echo unreadable")...)...)
			if strings.Contains(r.stdout, "PRIVATE KEY") || !strings.Contains(r.stdout, "unreadable") {
				t.Errorf("%s: %v around ~/.ssh: %v", mode, flag, r)
			}
		}
		// Named, it is given up.
		if r := run(t, o, append(fsOpts(t, mode), "--ro", filepath.Join(w.home, ".ssh"), "--", "cat", key)...); !strings.Contains(r.stdout, "PRIVATE KEY") {
			t.Errorf("%s: --ro ~/.ssh: %v", mode, r)
		}
	}
}

// TestSettingsFiles: a .sandbox.json in a parent of the working
// directory and the user's config.json apply (--explain shows them); one
// in a writable root of the run is ignored with a note, since a program
// could have written it to widen its next run; a changed file is read
// again.
func TestSettingsFiles(t *testing.T) {
	w := newWorkspace(t)
	xdg := filepath.Join(w.home, ".config")
	mustMkdir(t, filepath.Join(xdg, "sandbox-executable"))
	write(t, filepath.Join(xdg, "sandbox-executable", "config.json"), `{"memory":"3G"}`)
	parent := filepath.Dir(w.root)
	write(t, filepath.Join(parent, ".sandbox.json"), `{"rw":["outside"],"pids":5000}`)
	o := runOpts{env: append(w.env(), "SANDBOX_EXECUTABLE_WARM=debug"), dir: w.root}
	r := run(t, o, "--", "/bin/sh", "-c", "echo x > "+w.out+"/from-file && echo wrote")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote") {
		t.Fatalf("a parent's .sandbox.json: %v", r)
	}
	m := explainJSON(t, runOpts{env: w.env(), dir: w.root})
	settings := fmt.Sprint(field(m, "plan", "settings"))
	if !strings.Contains(settings, filepath.Join(parent, ".sandbox.json")+": used") || !strings.Contains(settings, "config.json: used") {
		t.Errorf("settings: %s", settings)
	}
	if got := fmt.Sprint(field(m, "plan", "limits")); !strings.Contains(got, "pids:5000") || !strings.Contains(got, "memory_bytes:3.221225472e+09") {
		t.Errorf("limits from the files: %s", got)
	}
	// The file changes: the next run decides again.
	write(t, filepath.Join(parent, ".sandbox.json"), `{"pids":5001}`)
	if r := run(t, o, "--", "/bin/sh", "-c", "echo y > "+w.out+"/after-change"); r.code == 0 {
		t.Errorf("the root the file no longer grants: %v", r)
	}
	// In the writable root: ignored, with a note.
	write(t, filepath.Join(w.root, ".sandbox.json"), `{"rw":["`+w.out+`"]}`)
	r = run(t, runOpts{env: w.env(), dir: w.root}, "--", "/bin/sh", "-c", "echo z > "+w.out+"/from-root-file")
	if r.code == 0 || !strings.Contains(r.stderr, "sandbox-executable: note: "+filepath.Join(w.root, ".sandbox.json")+" ignored: it lies in the writable root "+w.root) {
		t.Errorf("a .sandbox.json in the writable root: %v", r)
	}
	if _, err := os.Lstat(filepath.Join(w.out, "from-root-file")); err == nil {
		t.Error("a .sandbox.json in the writable root widened the run")
	}
	// Nor is one read when a policy comes from the command line.
	if r := w.sandbox(t, wsPolicy(t, w.root), []string{"--explain"}); strings.Contains(r.stdout, ".sandbox.json") {
		t.Errorf("a policy given, and a settings file read: %v", r)
	}
}

// TestExplainForeseesTheCgroup: as a user who cannot make a cgroup here,
// --explain says the run would be refused, with the line the run is then
// refused with; the advice fits the host (no systemd user scope where
// systemd is not running).
func TestExplainForeseesTheCgroup(t *testing.T) {
	isoNeedRoot(t)
	w := newWorkspace(t)
	if err := exec.Command("chown", "-R", "65534:65534", w.root, w.home).Run(); err != nil {
		t.Fatal(err)
	}
	o := runOpts{env: w.env(), dir: w.root, cred: isoNobody.cred}
	r := run(t, o, "--", "/bin/true")
	if r.code != 125 {
		t.Skipf("nobody can have a cgroup here: %v", r)
	}
	m := explainJSON(t, o)
	// The same refusal and advice (the details of what was denied are
	// each one's: faccessat's answers, the first write that failed).
	refused, _ := field(m, "refused").(string)
	const head = "refusing to run: no cgroup for the memory, pids and CPU limits of the whole tree ("
	// The advice follows the last "); " (the details hold parentheses
	// of their own).
	foreseen := refused[strings.LastIndex(refused, "); ")+1:]
	said := r.stderr[strings.LastIndex(r.stderr, "); ")+1:]
	if !strings.HasPrefix(refused, head) || !strings.HasPrefix(r.stderr, "sandbox-executable: "+head) || foreseen == "" || foreseen+"\n" != said {
		t.Errorf("--explain foresaw %q; the run said %q", refused, r.stderr)
	}
	if st, err := os.Stat("/run/systemd/system"); (err != nil || !st.IsDir()) && strings.Contains(r.stderr, "systemd-run") {
		t.Errorf("advice naming systemd-run on a host without systemd: %s", r.stderr)
	}
	m = explainJSON(t, o, "--allow-degraded")
	if field(m, "refused") != nil || !strings.Contains(fmt.Sprint(field(m, "degradations")), "no cgroup for the memory, pids and CPU limits") {
		t.Errorf("--explain --allow-degraded: %v %v", field(m, "refused"), field(m, "degradations"))
	}
}

// TestExplainPath: "explain PATH..." answers read, write and execute for
// each path under the options given, with the rule that decides and what
// would allow it; the answers are the run's (checked against real runs).
func TestExplainPath(t *testing.T) {
	w := newWorkspace(t)
	o := runOpts{env: w.env(), dir: w.root}
	secret, outside := filepath.Join(w.home, ".ssh", "id_rsa"), filepath.Join(w.out, "new")
	r := run(t, o, "explain", secret, outside, filepath.Join(w.root, "made"), filepath.Join(w.root, ".git", "hooks", "pre-commit"))
	want := []string{
		secret + "\n  read     denied   a denied path, unreadable: " + filepath.Join(w.home, ".ssh") + " (default_sensitive_paths ~/.ssh); --ro ~/.ssh allows reading it\n",
		outside + "\n  read     allowed  everything outside the denied paths is readable\n  write    denied   outside the writable roots; --rw " + w.out + " allows it\n",
		filepath.Join(w.root, "made") + "\n  read     allowed  everything outside the denied paths is readable\n  write    allowed  in a writable root: " + w.root,
		"pre-commit\n  read     allowed  everything outside the denied paths is readable\n  write    denied   a path no program may write: " + filepath.Join(w.root, ".git") + " (protected_metadata); never writable",
	}
	for _, s := range want {
		if r.code != 0 || !strings.Contains(r.stdout, s) {
			t.Errorf("explain lacks %q:\n%v", s, r)
		}
	}
	// What it says is what a run does.
	if r := run(t, o, "--", "/bin/sh", "-c", "echo x > "+outside); r.code == 0 {
		t.Errorf("explain said denied, the run wrote: %v", r)
	}
	if r := run(t, o, "explain", "--rw", w.out, "--", outside); !strings.Contains(r.stdout, "write    allowed  in a writable root: "+w.out+" (--rw)") {
		t.Errorf("explain with --rw: %v", r)
	}
	if r := run(t, o, "--rw", w.out, "--", "/bin/sh", "-c", "echo x > "+outside); r.code != 0 {
		t.Errorf("explain said allowed, the run was refused: %v", r)
	}
}

// TestPersistCache: with --persist-cache, what a build that succeeds adds
// to its scratch caches reaches the host's cache, and nothing else does:
// entries the host had stay byte for byte, a link or a change to an
// existing entry is not written back, and a run that fails writes back
// nothing.
func TestPersistCache(t *testing.T) {
	skipBuildsIfShort(t)
	goTool := needTool(t, "go")
	w := newWorkspace(t)
	gocache, modcache := writeGoModule(t, w, goTool)
	write(t, filepath.Join(w.root, "more.go"), "package main\n\nfunc init() { println(\"persisted\") }\n")
	before := cacheState(t, gocache)
	snap := snapshotCaches(t, modcache)
	env := buildEnv(w, "GOPROXY=off", "GOTOOLCHAIN=local")
	victim := ""
	for _, l := range strings.Split(before, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasSuffix(f[0], "-d") {
			victim = f[0]
			break
		}
	}
	script := `go build -o app . && ln -s /etc/passwd "$(go env GOCACHE)/planted-link"`
	if victim != "" {
		script += ` && echo poisoned > "$(go env GOCACHE)/` + victim + `"`
	}
	r := run(t, runOpts{env: env, dir: w.root}, "--persist-cache", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("go build with --persist-cache: %v", r)
	}
	after := cacheState(t, gocache)
	had := map[string]bool{}
	for _, l := range strings.Split(after, "\n") {
		had[l] = true
	}
	for _, l := range strings.Split(before, "\n") {
		// A directory's time changes with what is added to it.
		if f := strings.Fields(l); !had[l] && len(f) > 1 && !strings.HasPrefix(f[1], "d") {
			t.Errorf("an entry the host's cache had changed: %s", l)
		}
	}
	if len(strings.Split(after, "\n")) <= len(strings.Split(before, "\n")) {
		t.Errorf("nothing the build added was written back")
	}
	if _, err := os.Lstat(filepath.Join(gocache, "planted-link")); err == nil {
		t.Error("a link was written back")
	}
	snap.unchanged(t)
	// A run that fails writes back nothing.
	if r := run(t, runOpts{env: env, dir: w.root}, "--persist-cache", "--", "sh", "-c", `touch "$(go env GOCACHE)/from-a-failed-run"; exit 1`); r.code != 1 {
		t.Fatalf("%v", r)
	}
	if _, err := os.Lstat(filepath.Join(gocache, "from-a-failed-run")); err == nil {
		t.Error("a failed run's cache was written back")
	}
}
