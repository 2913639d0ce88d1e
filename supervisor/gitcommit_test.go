package supervisor

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sandbox-executable/fsmed"
	"sandbox-executable/policy"
	"sandbox-executable/seccomp"
)

// gitCommitPlan resolves the built-in default over a fresh repository
// with --allow-git-commit.
func gitCommitPlan(t *testing.T) *policy.Plan {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	pol := policy.DefaultStandalone(ws, policy.HostSize{CPUs: 2, MemoryBytes: 4 << 30})
	p, err := policy.Resolve(policy.Input{Policy: *pol, Seccomp: pol.DerivedSeccompProfile(), Limits: pol.DerivedResourceLimits(),
		PolicyCwd: ws, Environ: []string{"HOME=" + filepath.Dir(ws), "PATH=/usr/bin:/bin"}, Syscalls: seccomp.Table{},
		Changes: &policy.Changes{GitCommit: "--allow-git-commit", LiftDefaults: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Filesystem.GitDirs) != 1 {
		t.Fatalf("git dirs: %+v", p.Filesystem.GitDirs)
	}
	return p
}

// TestPrepareWritableGitDir: with a writable git directory both modes
// send the file calls to the supervisor, which mediates the root's and the
// git directory's top levels (the latter marked as a git directory's); the
// mounts leave the git directory alone; a host where the supervisor cannot
// mediate, or without Landlock, refuses the run in one line.
// Exact mode makes no placeholder in the root either: Landlock and the
// supervisor keep its missing protected names from being made.
func TestPrepareWritableGitDir(t *testing.T) {
	for _, mode := range []string{FSExact, FSLandlock} {
		t.Run(mode, func(t *testing.T) {
			plan := gitCommitPlan(t)
			g := plan.Filesystem.GitDirs[0].Path
			f := rootHost
			f.FileMediation = true
			cfg := Config{Plan: plan, Argv: []string{"/bin/true"}, Cwd: plan.PolicyCwd, TempDir: t.TempDir(), RunID: "x", FSMode: mode}
			pr, err := Prepare(cfg, &f)
			if err != nil {
				t.Fatal(err)
			}
			rec := pr.Service()
			if rec.Files == nil {
				t.Fatal("nothing mediated")
			}
			i := slices.IndexFunc(rec.Files.Dirs, func(d fsmed.Dir) bool { return d.Path == g })
			j := slices.IndexFunc(rec.Files.Dirs, func(d fsmed.Dir) bool { return d.Path == plan.PolicyCwd })
			if i < 0 || j < 0 {
				t.Fatalf("mediated: %+v", rec.Files.Dirs)
			}
			if d := rec.Files.Dirs[i]; !d.Git || !slices.Contains(d.Names, "config") || !slices.Contains(d.Names, "hooks") {
				t.Errorf("the git directory's entry: %+v", d)
			}
			if d := rec.Files.Dirs[j]; d.Git || !slices.Contains(d.Names, ".git") {
				t.Errorf("the root's entry: %+v", d)
			}
			if mode == FSExact {
				// No mount in the git directory, and no placeholder in
				// the root: its listing is a dependency of the split.
				for _, p := range pr.View.ReadOnly {
					if policy.Within(p, g) {
						t.Errorf("a mount in the git directory: %s", p)
					}
				}
				for _, p := range pr.View.Placeholders {
					if policy.Within(p, plan.PolicyCwd) {
						t.Errorf("a placeholder in the root: %s", p)
					}
				}
				if !slices.Contains(pr.View.LateWriteDenied, filepath.Join(plan.PolicyCwd, ".vtcode")) || !slices.Contains(pr.View.LateWriteDenied, filepath.Join(g, "config")) {
					t.Errorf("left to Landlock: %v", pr.View.LateWriteDenied)
				}
			}
			said := false
			for _, n := range pr.Landlock.Narrowed {
				said = said || n.Dir == g && strings.Contains(n.Effect, "no link, FIFO or socket")
			}
			if !said {
				t.Errorf("the git directory's narrowing: %+v", pr.Landlock.Narrowed)
			}
			if a := pr.Access(filepath.Join(g, "index")); !a.Write.Allowed || !strings.Contains(a.Write.Rule, "git directory") {
				t.Errorf("explain .git/index: %+v", a.Write)
			}
			if a := pr.Access(filepath.Join(g, "hooks", "pre-commit")); a.Write.Allowed {
				t.Errorf("explain .git/hooks/pre-commit: %+v", a.Write)
			}
			for _, host := range []struct {
				name string
				abi  int
				med  bool
				want string
			}{{"no mediation", 7, false, "the supervisor cannot make the entries of " + g}, {"no Landlock", 0, true, "this kernel has no Landlock"}} {
				f := rootHost
				f.LandlockABI, f.FileMediation = host.abi, host.med
				_, err := Prepare(cfg, &f)
				if err == nil || !strings.HasPrefix(err.Error(), "refusing to run: --allow-git-commit: "+host.want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("%s: %v", host.name, err)
				}
			}
		})
	}
}
