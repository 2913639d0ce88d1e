package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The README's examples, run verbatim. README.md marks each tested block
// with a comment line `<!-- README example "NAME": ... -->` before it; the
// block is the indented code that follows. The command text is used as it
// stands, with exactly these substitutions and nothing else:
//
//   - "standalone": none. Each line runs on its own in a fresh project of
//     the kind its program builds (a Go module, an npm project locked to a
//     registry stand-in, a directory of wheels, a crate), with warm caches
//     in a fake HOME.
//   - "allowlist": /home/me/project becomes the test's project directory,
//     and the allowlist entry {"domain":"registry.npmjs.org","port":443}
//     becomes the registry stand-in's {"domain":"127.0.0.1","port":PORT},
//     which the project's .npmrc names (npm's own configuration, not the
//     example's text).
//
// "sandbox-executable" is the binary under test, found first in PATH.

// readmeExample returns the lines of the code block after the marker of
// name in README.md, without their four-space indent.
func readmeExample(t *testing.T, name string) []string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	marker := `<!-- README example "` + name + `"`
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, marker) {
			continue
		}
		var block []string
		for _, l := range lines[i+1:] {
			switch {
			case strings.HasPrefix(l, "    "):
				block = append(block, strings.TrimPrefix(l, "    "))
			case strings.TrimSpace(l) == "" && len(block) == 0:
			case strings.TrimSpace(l) == "":
				block = append(block, "")
			default:
				return trimBlank(block)
			}
		}
		return trimBlank(block)
	}
	t.Fatalf("README.md has no example marked %q", name)
	return nil
}

func trimBlank(b []string) []string {
	for len(b) > 0 && b[len(b)-1] == "" {
		b = b[:len(b)-1]
	}
	return b
}

// binDir is a directory holding "sandbox-executable", the binary under test.
func binDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	_ = os.Chmod(d, 0o755)
	if err := os.Symlink(binary, filepath.Join(d, "sandbox-executable")); err != nil {
		t.Fatal(err)
	}
	return d
}

// shell runs script with sh in dir, outside any sandbox: the example as a
// user types it.
func shell(t *testing.T, dir string, env []string, script string) result {
	t.Helper()
	return run(t, runOpts{env: env, dir: dir, via: []string{"/bin/sh", "-c", script, "sh"}})
}

// TestReadmeStandaloneExamples runs each line of the README's standalone
// example in the default, with warm caches: each must succeed and leave
// the host's caches unchanged.
func TestReadmeStandaloneExamples(t *testing.T) {
	skipBuildsIfShort(t)
	lines := readmeExample(t, "standalone")
	if len(lines) < 5 {
		t.Fatalf("the standalone example has %d lines: %q", len(lines), lines)
	}
	bin := binDir(t)
	for i, line := range lines {
		_, after, _ := strings.Cut(line, " -- ")
		tool, _, _ := strings.Cut(after, " ")
		if tool == "" {
			tool = "explain"
		}
		if strings.Contains(after, "-m pip install") {
			tool = "python3" // the interpreter itself, however named
		}
		t.Run(fmt.Sprintf("%d_%s", i, tool), func(t *testing.T) {
			w := newWorkspace(t)
			env := buildEnv(w, "GOTOOLCHAIN=local", "PIP_DISABLE_PIP_VERSION_CHECK=1")
			var snap *caches
			var want string
			switch tool {
			case "go":
				gocache, modcache := writeGoModule(t, w, needTool(t, "go"))
				write(t, filepath.Join(w.root, "more_test.go"), "package main\n\nimport \"testing\"\n\nfunc TestMore(t *testing.T) {}\n")
				snap = snapshotCaches(t, gocache, modcache)
				if strings.Contains(line, "go test") {
					want = "ok"
				}
			case "npm":
				npm := needTool(t, "npm")
				reg := startNpmRegistry(t)
				warm := filepath.Join(filepath.Dir(w.root), "warm")
				mustMkdir(t, warm)
				reg.writeNpmProject(t, warm)
				host(t, warm, buildEnv(w), npm, "ci")
				reg.writeNpmProject(t, w.root)
				snap, want = snapshotCaches(t, filepath.Join(w.home, ".npm")), "added 1 package"
			case "python3":
				pipOK(t)
				writeWheel(t, filepath.Join(w.root, "wheels"), "mypkg")
				pipCache := filepath.Join(w.home, ".cache", "pip")
				mustMkdir(t, pipCache)
				snap, want = snapshotCaches(t, pipCache), "Successfully installed mypkg"
			case "cargo":
				needTool(t, "cargo")
				writeCrate(t, w.root)
				registry := filepath.Join(w.home, ".cargo", "registry")
				mustMkdir(t, registry)
				snap = snapshotCaches(t, registry)
			case "explain":
				want = `"scratch_caches"`
				mustMkdir(t, filepath.Join(w.home, ".cache", "go-build"))
			default:
				t.Fatalf("no project for the README line %q: add one here", line)
			}
			r := shell(t, w.root, append(env, "PATH="+bin+":"+systemPath), line)
			if r.code != 0 || !strings.Contains(r.stdout+r.stderr, want) {
				t.Fatalf("README line %q: %v", line, r)
			}
			if tool == "explain" && !json.Valid([]byte(r.stdout)) {
				t.Errorf("--explain printed no JSON: %v", r)
			}
			if snap != nil {
				snap.unchanged(t)
			}
		})
	}
}

// TestReadmeAllowlistExample runs the README's allowlist example: npm ci
// through the proxy against a registry stand-in on 127.0.0.1, and the
// report it asks for.
func TestReadmeAllowlistExample(t *testing.T) {
	skipBuildsIfShort(t)
	needTool(t, "npm")
	script := strings.Join(readmeExample(t, "allowlist"), "\n") + "\n"
	const project, entry = "/home/me/project", `{"domain":"registry.npmjs.org","port":443}`
	if !strings.Contains(script, project) || !strings.Contains(script, entry) {
		t.Fatalf("the allowlist example no longer names %s and %s:\n%s", project, entry, script)
	}
	reg := startNpmRegistry(t)
	w := newWorkspace(t)
	reg.writeNpmProject(t, w.root)
	script = strings.ReplaceAll(script, project, w.root)
	script = strings.ReplaceAll(script, entry, `{"domain":"127.0.0.1","port":`+reg.port+`}`)
	r := shell(t, w.root, buildEnv(w, "PATH="+binDir(t)+":"+systemPath), script)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "added 1 package") {
		t.Fatalf("the allowlist example:\n%s\n%v", script, r)
	}
	if reg.hits.Load() == 0 {
		t.Error("npm ci never reached the registry stand-in")
	}
	if _, err := os.Stat(filepath.Join(w.root, "node_modules", "tinypkg", "index.js")); err != nil {
		t.Errorf("tinypkg was not installed: %v", err)
	}
	var rep struct {
		Ending   string `json:"ending"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(w.root, "run.json"))), &rep); err != nil || rep.Ending != "exited" || rep.ExitCode != 0 {
		t.Errorf("run.json: %+v %v", rep, err)
	}
}
