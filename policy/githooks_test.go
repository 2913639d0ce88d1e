package policy

import (
	"os/user"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// hookDenials returns the write-denied entries beyond the four protected
// names of every root, with WS and D standing for the workspace and the
// test's directory.
func hookDenials(e testEnv, plan *Plan) []DeniedPath {
	var out []DeniedPath
	r := strings.NewReplacer(e.ws, "WS", e.dir, "D")
	for _, d := range plan.Filesystem.WriteDenied {
		if d.Source == "protected_metadata" {
			continue
		}
		d.Path, d.Source, d.Given = r.Replace(d.Path), r.Replace(d.Source), r.Replace(d.Given)
		out = append(out, d)
	}
	return out
}

// gitDir makes WS a repository: WS/.git with config text.
func gitDir(t *testing.T, e testEnv, config string) {
	t.Helper()
	mkdirs(t, e.ws+"/.git/hooks")
	writeFile(t, e.ws+"/.git/config", config)
}

func TestHooksProtected(t *testing.T) {
	const fromConfig = "protected_metadata (core.hooksPath of the repository at WS, set in WS/.git/config)"
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, e testEnv)
		roots []string // default: WS
		home  string   // default: e.home
		want  []DeniedPath
	}{
		{name: "hooksPath relative to the work tree, existing",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[core]\n\thooksPath = .githooks\n")
				mkdirs(t, e.ws+"/.githooks")
			},
			want: []DeniedPath{{Path: "WS/.githooks", Source: fromConfig, Given: ".githooks", Exists: true}}},
		{name: "hooksPath not yet existing",
			setup: func(t *testing.T, e testEnv) { gitDir(t, e, "[core]\n\thooksPath = tools/git-hooks\n") },
			want:  []DeniedPath{{Path: "WS/tools/git-hooks", Source: fromConfig, Given: "tools/git-hooks"}}},
		{name: "hooksPath key in any case, every value, quoted",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[Core]\n\tHOOKSPATH = a\n[core]\n  hookspath = \"b c\" ; comment\n[core \"sub\"]\n\thooksPath = not-this\n")
			},
			want: []DeniedPath{{Path: "WS/a", Source: fromConfig, Given: "a"}, {Path: "WS/b c", Source: fromConfig, Given: "b c"}}},
		{name: "absolute hooksPath inside the root; outside it nothing is writable anyway",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[core]\nhooksPath = "+e.ws+"/abs\n[core]\nhooksPath = "+e.dir+"/elsewhere\n")
			},
			want: []DeniedPath{{Path: "WS/abs", Source: fromConfig}}},
		{name: "~ expands to HOME",
			setup: func(t *testing.T, e testEnv) { gitDir(t, e, "[core]\nhooksPath = ~/hooks\n") },
			home:  "WS/home",
			want:  []DeniedPath{{Path: "WS/home/hooks", Source: fromConfig, Given: "~/hooks"}}},
		{name: "a .git/hooks symlink into the workspace",
			setup: func(t *testing.T, e testEnv) {
				mkdirs(t, e.ws+"/.git", e.ws+"/hooks-real")
				writeFile(t, e.ws+"/.git/config", "[core]\n")
				symlink(t, "../hooks-real", e.ws+"/.git/hooks")
			},
			want: []DeniedPath{{Path: "WS/hooks-real", Source: "protected_metadata (hooks of the repository at WS)", Given: "WS/.git/hooks", Exists: true}}},
		{name: "a dangling .git/hooks symlink: its target cannot be created",
			setup: func(t *testing.T, e testEnv) {
				mkdirs(t, e.ws+"/.git")
				symlink(t, e.ws+"/later/hooks", e.ws+"/.git/hooks")
			},
			want: []DeniedPath{{Path: "WS/later/hooks", Source: "protected_metadata (hooks of the repository at WS)", Given: "WS/.git/hooks"}}},
		{name: "a hook that is a symlink into the workspace",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "")
				writeFile(t, e.ws+"/scripts/pre-commit", "#!/bin/sh\n")
				symlink(t, "../../scripts/pre-commit", e.ws+"/.git/hooks/pre-commit")
			},
			want: []DeniedPath{{Path: "WS/scripts/pre-commit", Source: "protected_metadata (target of the hook WS/.git/hooks/pre-commit)", Given: "WS/.git/hooks/pre-commit", Exists: true}}},
		{name: "hooksPath a symlink in the workspace: the target and the link",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[core]\nhooksPath = .githooks\n")
				mkdirs(t, e.ws+"/scripts/hooks")
				symlink(t, "scripts/hooks", e.ws+"/.githooks")
			},
			want: []DeniedPath{
				{Path: "WS/scripts/hooks", Source: fromConfig, Given: ".githooks", Exists: true},
				{Path: "WS/.githooks", Source: fromConfig + " (the symlink itself)", Given: ".githooks", Exists: true},
			}},
		{name: "hooksPath through a symlink in the middle",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[core]\nhooksPath = tools/hooks\n")
				mkdirs(t, e.ws+"/real")
				symlink(t, "real", e.ws+"/tools")
			},
			want: []DeniedPath{
				{Path: "WS/real/hooks", Source: fromConfig, Given: "tools/hooks"},
				{Path: "WS/tools", Source: fromConfig + " (a symbolic link on the way)", Given: "tools/hooks", Exists: true},
			}},
		{name: "an included file: protected, and its hooksPath too",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[include]\n\tpath = ../.gitconfig-shared\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = ../conditional\n")
				writeFile(t, e.ws+"/.gitconfig-shared", "[core]\n\thooksPath = shared-hooks\n[include]\npath = .git/config\n")
			},
			want: []DeniedPath{
				{Path: "WS/.gitconfig-shared", Source: "protected_metadata (git config included by WS/.git/config)", Given: "../.gitconfig-shared", Exists: true},
				{Path: "WS/conditional", Source: "protected_metadata (git config included by WS/.git/config)", Given: "../conditional"},
				{Path: "WS/shared-hooks", Source: "protected_metadata (core.hooksPath of the repository at WS, set in WS/.gitconfig-shared)", Given: "shared-hooks"},
			}},
		{name: "the global config's relative hooksPath applies to the repository",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "")
				writeFile(t, e.home+"/.gitconfig", "[core]\nhooksPath = .husky\n")
				writeFile(t, e.home+"/.config/git/config", "[core]\nhooksPath = .xdg-hooks\n")
				writeFile(t, e.dir+"/etc/gitconfig", "[core]\nhooksPath = .system-hooks\n")
			},
			want: []DeniedPath{
				{Path: "WS/.system-hooks", Source: "protected_metadata (core.hooksPath of the repository at WS, set in D/etc/gitconfig)", Given: ".system-hooks"},
				{Path: "WS/.xdg-hooks", Source: "protected_metadata (core.hooksPath of the repository at WS, set in D/home/.config/git/config)", Given: ".xdg-hooks"},
				{Path: "WS/.husky", Source: "protected_metadata (core.hooksPath of the repository at WS, set in D/home/.gitconfig)", Given: ".husky"},
			}},
		{name: "the global config includes a file in the workspace: protected",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "")
				writeFile(t, e.home+"/.gitconfig", "[includeIf \"gitdir:"+e.ws+"/\"]\n\tpath = "+e.ws+"/.gitconfig\n")
				writeFile(t, e.ws+"/.gitconfig", "[core]\n\thooksPath = hooks\n")
			},
			want: []DeniedPath{
				{Path: "WS/.gitconfig", Source: "protected_metadata (git config included by D/home/.gitconfig)", Exists: true},
				{Path: "WS/hooks", Source: "protected_metadata (core.hooksPath of the repository at WS, set in WS/.gitconfig)", Given: "hooks"},
			}},
		{name: "a writable HOME: its own includes gain nothing from a denial, the repository's do",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[include]\n\tpath = ~/.repo-extra\n")
				mkdirs(t, e.ws+"/home")
				writeFile(t, e.ws+"/home/.gitconfig", "[include]\n\tpath = ~/.gitconfig.local\n[core]\n\thooksPath = .global-hooks\n")
			},
			home: "WS/home",
			want: []DeniedPath{
				{Path: "WS/home/.repo-extra", Source: "protected_metadata (git config included by WS/.git/config)", Given: "~/.repo-extra"},
				{Path: "WS/.global-hooks", Source: "protected_metadata (core.hooksPath of the repository at WS, set in WS/home/.gitconfig)", Given: ".global-hooks"},
			}},
		{name: "a linked worktree: the common dir's config, the worktree's own, top-relative",
			setup: func(t *testing.T, e testEnv) {
				main := e.dir + "/main/.git"
				mkdirs(t, main+"/worktrees/w")
				writeFile(t, main+"/config", "[core]\nhooksPath = .githooks\n")
				writeFile(t, main+"/worktrees/w/commondir", "../..\n")
				writeFile(t, main+"/worktrees/w/config.worktree", "[core]\nhooksPath = wt-hooks\n")
				writeFile(t, e.ws+"/.git", "gitdir: "+main+"/worktrees/w\n")
			},
			want: []DeniedPath{
				{Path: "D/main/.git/worktrees/w", Source: "protected_metadata (gitdir of WS/.git)", Exists: true},
				{Path: "D/main/.git", Source: "protected_metadata (commondir of D/main/.git/worktrees/w)", Given: "../..", Exists: true},
				{Path: "WS/.githooks", Source: "protected_metadata (core.hooksPath of the repository at WS, set in D/main/.git/config)", Given: ".githooks"},
				{Path: "WS/wt-hooks", Source: "protected_metadata (core.hooksPath of the repository at WS, set in D/main/.git/worktrees/w/config.worktree)", Given: "wt-hooks"},
			}},
		{name: "the repository above the root",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[core]\nhooksPath = project/hooks\n")
				mkdirs(t, e.ws+"/project")
			},
			roots: []string{"WS/project"},
			want:  []DeniedPath{{Path: "WS/project/hooks", Source: fromConfig, Given: "project/hooks"}}},
		{name: "no repository: nothing more",
			setup: func(t *testing.T, e testEnv) { writeFile(t, e.home+"/.gitconfig", "[core]\nhooksPath = .husky\n") },
			want:  nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			tt.setup(t, e)
			sub := strings.NewReplacer("WS", e.ws, "D/", e.dir+"/")
			roots := []string{e.ws}
			if tt.roots != nil {
				roots = nil
				for _, r := range tt.roots {
					roots = append(roots, sub.Replace(r))
				}
			}
			in := e.input(wsPolicy(roots...))
			in.PolicyCwd = roots[0]
			if tt.home != "" {
				home := sub.Replace(tt.home)
				mkdirs(t, home)
				in.Environ = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
			}
			got := hookDenials(e, mustResolve(t, in))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestHooksRefused(t *testing.T) {
	for _, tt := range []struct {
		name, config, want string
		roots              []string
	}{
		{name: "hooks in the root itself", config: "[core]\nhooksPath = .\n",
			want: "--sandbox-policy: protected metadata: the writable root WS is where git would run hooks or read configuration from (protected_metadata (core.hooksPath of the repository at WS, set in WS/.git/config), given as \".\"); a program could write there, so refusing"},
		{name: "hooks in a root below the repository", config: "[core]\nhooksPath = project\n", roots: []string{"WS/project"},
			want: "--sandbox-policy: protected metadata: the writable root WS/project is where git would run hooks or read configuration from (protected_metadata (core.hooksPath of the repository at WS, set in WS/.git/config), given as \"project\"); a program could write there, so refusing"},
		{name: "a config git refuses", config: "[core]\nhooksPath = \"x\n",
			want: "--sandbox-policy: protected metadata: git config WS/.git/config: line 2 is not valid git configuration (git refuses it too); what it makes git run cannot be known, so refusing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			gitDir(t, e, tt.config)
			mkdirs(t, e.ws+"/project")
			sub := strings.NewReplacer("WS", e.ws)
			roots := []string{e.ws}
			if tt.roots != nil {
				roots = []string{sub.Replace(tt.roots[0])}
			}
			in := e.input(wsPolicy(roots...))
			in.PolicyCwd = roots[0]
			if got, want := resolveError(t, in), sub.Replace(tt.want); got != want {
				t.Errorf("\n got %s\nwant %s", got, want)
			}
		})
	}
	t.Run("an include loop ends", func(t *testing.T) {
		e := newTestEnv(t)
		gitDir(t, e, "[include]\npath = config\n[include]\npath = ../a\n")
		writeFile(t, e.ws+"/a", "[include]\npath = .git/config\n")
		mustResolve(t, e.input(wsPolicy(e.ws)))
	})
	t.Run("a huge included file is refused", func(t *testing.T) {
		e := newTestEnv(t)
		gitDir(t, e, "[include]\npath = ../big\n")
		writeFile(t, e.ws+"/big", "[core]\n"+strings.Repeat("# filler\n", maxGitFile/9+1)+"hooksPath = evil\n")
		if got := resolveError(t, e.input(wsPolicy(e.ws))); !strings.Contains(got, "big: larger than") {
			t.Errorf("got %s", got)
		}
	})
}

func TestGitPathExpansion(t *testing.T) {
	e := newTestEnv(t)
	g := &hookGuard{r: &resolver{env: environ{"HOME=" + e.home}}}
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"~", e.home, true}, {"~/", e.home + "/", true}, {"~/h", e.home + "/h", true},
		{"rel/x", "rel/x", true}, {"/abs", "/abs", true},
		{"%(prefix)/share", "", false}, {"~no-such-user-here/x", "", false},
	} {
		if got, ok := g.expand(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("expand(%q) = %q %v, want %q %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	if u, err := user.Lookup("root"); err == nil {
		if got, ok := g.expand("~root/h"); !ok || got != filepath.Join(u.HomeDir, "h") {
			t.Errorf("~root/h: %q %v", got, ok)
		}
	}
}
