package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// home is the work items' HOME, which holds the workspace (main).
var home string

// workItem makes the work item called name ready in ws (generating its
// tree once) and says whether it can run here; one that cannot is named on
// stderr and left out.
func workItem(ws, name string) (item, bool) {
	skip := func(why string) (item, bool) {
		fmt.Fprintf(os.Stderr, "bench: %s left out: %s\n", name, why)
		return item{}, false
	}
	switch name {
	case "open":
		return item{name: "50k open+close", argv: []string{*probe, "bench-open", "/etc/hostname", "50000"}, rounds: 20, net: true}, true
	case "stat":
		// /usr/include: a tree that stays in the page cache, so the figure
		// is the cost of the system calls, not of the disk.
		return item{name: "200k stat", argv: []string{*probe, "bench-stat", "/usr/include", "200000"}, rounds: 20, net: true}, true
	case "gobuild":
		// The project itself, with a warm build cache of its own in the
		// workspace: what an agent's `go build` after a small edit costs
		// (compile actions cached, the link not).
		goBin, err := exec.LookPath("go")
		if err != nil {
			return skip("no go on PATH")
		}
		root, err := moduleRoot()
		if err != nil {
			return skip(err.Error())
		}
		tmp := mkdir(ws, "gotmp")
		env := []string{"GOCACHE=" + filepath.Join(ws, "gocache"), "GOTMPDIR=" + tmp, "TMPDIR=" + tmp, "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local", "GOPROXY=off"}
		argv := []string{goBin, "build", "-buildvcs=false", "-o", filepath.Join(ws, "gobuild-out"), "./cmd/sandbox-executable"}
		if err := warm(argv, root, env); err != nil {
			return skip(err.Error())
		}
		return item{name: "go build (warm cache)", argv: argv, dir: root, env: env, rounds: 10, alone: true}, true
	case "gitstatus":
		if _, err := exec.LookPath("git"); err != nil {
			return skip("no git on PATH")
		}
		repo := filepath.Join(ws, "gitrepo")
		if err := genTree(repo, 250, 200, 64); err != nil {
			return skip(err.Error())
		}
		env := []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + home, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b"}
		for _, a := range [][]string{{"git", "init", "-q"}, {"git", "add", "-A"}, {"git", "commit", "-q", "-m", "tree"}} {
			if err := warm(a, repo, env); err != nil {
				return skip(err.Error())
			}
		}
		argv := []string{"git", "status", "--porcelain"}
		if err := warm(argv, repo, env); err != nil {
			return skip(err.Error())
		}
		return item{name: "git status, 50k files", argv: argv, dir: repo, env: env, rounds: 20, alone: true}, true
	case "npmci", "npmtop":
		// npmtop: the same install with the project as the writable
		// root: its node_modules is made at the root's top level, which
		// Landlock-only mode splits (no .git in it), so every file of it
		// is made by the supervisor for the program.
		if _, err := exec.LookPath("npm"); err != nil {
			return skip("no npm on PATH")
		}
		dir, env, err := genNpm(ws)
		if err != nil {
			return skip(err.Error())
		}
		argv := []string{"npm", "ci", "--offline", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error"}
		if err := warm(argv, dir, env); err != nil {
			return skip(err.Error())
		}
		it := item{name: "npm ci, local tarballs", argv: argv, dir: dir, env: env, rounds: 8, alone: true}
		if name == "npmtop" {
			it.name, it.root = "npm ci, at the root's top", dir
		}
		return it, true
	case "compileall":
		py, err := exec.LookPath("/usr/bin/python3")
		if err != nil {
			if py, err = exec.LookPath("python3"); err != nil {
				return skip("no python3")
			}
		}
		src, err := pythonLib(py)
		if err != nil {
			return skip(err.Error())
		}
		tree := filepath.Join(ws, "pytree")
		if err := os.MkdirAll(tree, 0o755); err != nil {
			return skip(err.Error())
		}
		for _, sub := range []string{"email", "json", "http", "xml", "asyncio", "unittest", "logging"} {
			if out, err := exec.Command("cp", "-r", filepath.Join(src, sub), filepath.Join(tree, sub)).CombinedOutput(); err != nil {
				return skip(fmt.Sprintf("cp: %v: %s", err, out))
			}
		}
		argv := []string{py, "-m", "compileall", "-q", "-f", "-j", "1", tree}
		return item{name: "python3 -m compileall -f", argv: argv, rounds: 10, env: []string{"PYTHONDONTWRITEBYTECODE="}, alone: true}, true
	}
	return skip("unknown work item (open, stat, gobuild, gitstatus, npmci, npmtop, compileall)")
}

func mkdir(parent, name string) string {
	d := filepath.Join(parent, name)
	check(os.MkdirAll(d, 0o755))
	return d
}

// warm runs argv once, bare, to fill caches.
func warm(argv []string, dir string, env []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, lastLine(out))
	}
	return nil
}

// moduleRoot is the project's own directory (where go.mod is).
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if d == "/" {
			return "", fmt.Errorf("not run inside the project (no go.mod above %s)", wd)
		}
	}
}

// genTree writes dirs*files small files under root.
func genTree(root string, dirs, files, size int) error {
	body := []byte(strings.Repeat("x", size-1) + "\n")
	for i := 0; i < dirs; i++ {
		d := filepath.Join(root, fmt.Sprintf("d%03d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		for j := 0; j < files; j++ {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.txt", j)), body, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// genNpm makes a project whose dependencies are 20 local package tarballs
// (each 40 small files), and its lock file; npm's cache is in ws.
func genNpm(ws string) (string, []string, error) {
	base := filepath.Join(ws, "npm")
	tarballs := mkdir(base, "tarballs")
	env := []string{"npm_config_cache=" + filepath.Join(base, "cache"), "npm_config_update_notifier=false", "HOME=" + home}
	var deps []string
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("se-bench-pkg%02d", i)
		src := filepath.Join(base, "src", name)
		if err := genTree(src, 4, 10, 512); err != nil {
			return "", nil, err
		}
		pj := fmt.Sprintf(`{"name":%q,"version":"1.0.0","main":"d000/f000.txt"}`, name)
		if err := os.WriteFile(filepath.Join(src, "package.json"), []byte(pj), 0o644); err != nil {
			return "", nil, err
		}
		if err := warm([]string{"npm", "pack", "--silent", "--pack-destination", tarballs, src}, base, env); err != nil {
			return "", nil, err
		}
		deps = append(deps, fmt.Sprintf(`%q:"file:../tarballs/%s-1.0.0.tgz"`, name, name))
	}
	proj := mkdir(base, "proj")
	pj := `{"name":"se-bench-proj","version":"1.0.0","private":true,"dependencies":{` + strings.Join(deps, ",") + `}}`
	if err := os.WriteFile(filepath.Join(proj, "package.json"), []byte(pj), 0o644); err != nil {
		return "", nil, err
	}
	if err := warm([]string{"npm", "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error"}, proj, env); err != nil {
		return "", nil, err
	}
	return proj, env, nil
}

// pythonLib is python's standard library directory.
func pythonLib(py string) (string, error) {
	out, err := exec.Command(py, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])").Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v", py, err)
	}
	return strings.TrimSpace(string(out)), nil
}
