package policy

import (
	"reflect"
	"strings"
	"testing"
)

func TestGitSettingsProtected(t *testing.T) {
	const repo = "of the repository at WS, set in WS/.git/config)"
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, e testEnv)
		home  string // default: e.home
		want  []DeniedPath
	}{
		{name: "core.fsmonitor relative to the top, existing",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[core]\n\tfsmonitor = tools/fsmonitor.sh\n")
				writeFile(t, e.ws+"/tools/fsmonitor.sh", "#!/bin/sh\n")
			},
			want: []DeniedPath{{Path: "WS/tools/fsmonitor.sh", Source: "protected_metadata (core.fsmonitor " + repo, Given: "tools/fsmonitor.sh", Exists: true}}},
		{name: "a missing program is reserved; a boolean fsmonitor names nothing",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[core]\n\tfsmonitor = true\n\tsshCommand = tools/ssh-wrap -F ./ssh/config\n")
			},
			want: []DeniedPath{
				{Path: "WS/tools/ssh-wrap", Source: "protected_metadata (core.sshCommand " + repo, Given: "tools/ssh-wrap"},
				{Path: "WS/ssh/config", Source: "protected_metadata (core.sshCommand " + repo, Given: "./ssh/config"},
			}},
		{name: "drivers, aliases, helpers; words that are no paths name nothing",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tprocess = sh scripts/filter.sh\n"+
					"[diff \"pdf\"]\n\ttextconv = ./conv\n[alias]\n\tup = !git rebase origin/main && make -f Makefile lint\n"+
					"[credential]\n\thelper = !tools/cred\n")
				writeFile(t, e.ws+"/scripts/filter.sh", "")
				writeFile(t, e.ws+"/Makefile", "")
				mkdirs(t, e.ws+"/clean", e.ws+"/tools")
			},
			want: []DeniedPath{
				{Path: "WS/scripts/filter.sh", Source: "protected_metadata (filter.lfs.process " + repo, Given: "scripts/filter.sh", Exists: true},
				{Path: "WS/conv", Source: "protected_metadata (diff.pdf.textconv " + repo, Given: "./conv"},
				{Path: "WS/Makefile", Source: "protected_metadata (alias.up " + repo, Given: "Makefile", Exists: true},
				{Path: "WS/tools/cred", Source: "protected_metadata (credential.helper " + repo, Given: "tools/cred"},
			}},
		{name: "cd: relative paths from both directories",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[alias]\n\tt = !cd sub && ./run.sh\n")
				mkdirs(t, e.ws+"/sub")
			},
			want: []DeniedPath{
				{Path: "WS/run.sh", Source: "protected_metadata (alias.t " + repo, Given: "./run.sh"},
				{Path: "WS/sub/run.sh", Source: "protected_metadata (alias.t " + repo, Given: "./run.sh"},
			}},
		{name: "a program that is a directory with entries, or outside the roots, is left alone; a link on the way is not",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[core]\n\tpager = ./tools\n\teditor = "+e.dir+"/editor\n\taskPass = lnk/askpass\n")
				writeFile(t, e.ws+"/tools/x", "")
				mkdirs(t, e.dir+"/out")
				symlink(t, e.dir+"/out", e.ws+"/lnk")
			},
			want: []DeniedPath{{Path: "WS/lnk", Source: "protected_metadata (core.askPass " + repo + " (a symbolic link on the way)", Given: "lnk/askpass", Exists: true}}},
		{name: "an include leads to a driver; the global config's and the system's values apply too",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[includeIf \"gitdir:/nowhere/\"]\n\tpath = "+e.dir+"/inc\n")
				writeFile(t, e.dir+"/inc", "[merge \"m\"]\n\tdriver = tools/merge %O %A %B\n")
				writeFile(t, e.home+"/.gitconfig", "[core]\n\teditor = "+e.ws+"/bin/edit --wait\n")
				writeFile(t, e.dir+"/etc/gitconfig", "[gpg]\n\tprogram = tools/gpg\n")
			},
			want: []DeniedPath{
				{Path: "WS/tools/merge", Source: "protected_metadata (merge.m.driver of the repository at WS, set in D/inc)", Given: "tools/merge"},
				{Path: "WS/tools/gpg", Source: "protected_metadata (gpg.program of the repository at WS, set in D/etc/gitconfig)", Given: "tools/gpg"},
				{Path: "WS/bin/edit", Source: "protected_metadata (core.editor of the repository at WS, set in D/home/.gitconfig)"},
			}},
		{name: "loaded files, ~ and $HOME",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[core]\n\tattributesFile = ~/attrs\n\texcludesFile = .ignore\n[gpg \"ssh\"]\n\tallowedSignersFile = .signers\n"+
					"[alias]\n\th = !$HOME/bin/h\n")
			},
			home: "WS/home",
			want: []DeniedPath{
				{Path: "WS/home/attrs", Source: "protected_metadata (core.attributesFile " + repo},
				{Path: "WS/.ignore", Source: "protected_metadata (core.excludesFile " + repo, Given: ".ignore"},
				{Path: "WS/.signers", Source: "protected_metadata (gpg.ssh.allowedSignersFile " + repo, Given: ".signers"},
				{Path: "WS/home/bin/h", Source: "protected_metadata (alias.h " + repo},
			}},
		{name: "refspecs and the user's own variables are no paths in the workspace",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[alias]\n\tpr = \"!f() { git fetch origin pull/$1/head:pr-$1 && git checkout pr-$1; }; f\"\n"+
					"\tt = !cat $TMPDIR/x $1/y\n\tl = !ls tools/$1\n")
				mkdirs(t, e.ws+"/pull")
			},
			want: nil},
		{name: "a common ~/.gitconfig: nothing refused, only the file an alias names protected",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "")
				writeFile(t, e.ws+"/Makefile", "all:\n")
				mkdirs(t, e.ws+"/src")
				writeFile(t, e.home+"/.gitconfig", `[core]
	editor = code --wait
	pager = delta
	excludesFile = ~/.gitignore_global
[interactive]
	diffFilter = delta --color-only
[filter "lfs"]
	clean = git-lfs clean -- %f
	smudge = git-lfs smudge -- %f
	process = git-lfs filter-process
[credential]
	helper = cache --timeout=3600
	helper = store --file ~/.git-credentials
[credential "https://github.com"]
	helper =
	helper = !/usr/bin/gh auth git-credential
[alias]
	lg = log --graph --pretty=format:'%Cred%h%Creset -%C(yellow)%d%Creset %s' --abbrev-commit
	up = !git fetch origin && git rebase origin/main
	cleanup = "!git branch --merged | grep -v '\\*\\|main' | xargs -n 1 git branch -d"
	todo = !grep -rn TODO . src
	f = "!f() { git log --oneline -n ${1:-10}; }; f"
	pr = "!f() { git fetch origin pull/$1/head:pr-$1 && git checkout pr-$1; }; f"
	sh = !sh -c 'cd \"$GIT_PREFIX\" && ls'
	make = !make -f Makefile
[gpg "ssh"]
	allowedSignersFile = ~/.ssh/allowed_signers
[init]
	templateDir = ~/.git-templates
`)
			},
			want: []DeniedPath{{Path: "WS/Makefile", Source: "protected_metadata (alias.make of the repository at WS, set in D/home/.gitconfig)", Given: "Makefile", Exists: true}}},
		{name: "-c inside an alias",
			setup: func(t *testing.T, e testEnv) {
				gitDir(t, e, "[alias]\n\tl = -c core.pager=tools/p log\n")
			},
			want: []DeniedPath{{Path: "WS/tools/p", Source: "protected_metadata (alias.l (-c core.pager) " + repo, Given: "tools/p"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			tt.setup(t, e)
			sub := strings.NewReplacer("WS", e.ws, "D/", e.dir+"/")
			in := e.input(wsPolicy(e.ws))
			in.PolicyCwd = e.ws
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

func TestGitSettingsRefused(t *testing.T) {
	const tail = "; git would run or read what it names, which a program could then write, so refusing"
	for _, tt := range []struct {
		name, config, want string
	}{
		{name: "a path built from an expansion", config: "[alias]\n\tx = !$(pwd)/x.sh\n",
			want: `--sandbox-policy: protected metadata: git config WS/.git/config: alias.x = "!$(pwd)/x.sh": "$(pwd)/x.sh" names a path that starts with $(pwd), which may be in the work tree and only git's shell knows` + tail},
		{name: "a pattern of files in the workspace", config: "[core]\n\tpager = sh tools/*.sh\n",
			want: `--sandbox-policy: protected metadata: git config WS/.git/config: core.pager = "sh tools/*.sh": "tools" is a directory inside a writable root in which it names files through an expansion or a pattern, which cannot be known here` + tail},
		{name: "a relative program where git's directory is not known", config: "[man \"x\"]\n\tcmd = ./viewer\n",
			want: `--sandbox-policy: protected metadata: git config WS/.git/config: man.x.cmd = "./viewer": "./viewer" is taken from the directory git runs it in, which cannot be known here` + tail},
		{name: "after a cd to a directory that is not known", config: "[alias]\n\tx = !cd \"$GIT_PREFIX\" && tools/x\n",
			want: `--sandbox-policy: protected metadata: git config WS/.git/config: alias.x = "!cd $GIT_PREFIX && tools/x": "tools/x" is taken from the directory git runs it in, which cannot be known here` + tail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			gitDir(t, e, tt.config)
			writeFile(t, e.ws+"/tools/a.sh", "")
			in := e.input(wsPolicy(e.ws))
			in.PolicyCwd = e.ws
			if got, want := resolveError(t, in), strings.ReplaceAll(tt.want, "WS", e.ws); got != want {
				t.Errorf("\n got %s\nwant %s", got, want)
			}
		})
	}
	t.Run("not when the program may write the file that says it", func(t *testing.T) {
		e := newTestEnv(t)
		gitDir(t, e, "")
		mkdirs(t, e.ws+"/home")
		writeFile(t, e.ws+"/home/.gitconfig", "[alias]\n\tx = !$PWD/x.sh\n\ty = !tools/y\n")
		in := e.input(wsPolicy(e.ws))
		in.Environ = []string{"HOME=" + e.ws + "/home", "PATH=/usr/bin:/bin"}
		got := hookDenials(e, mustResolve(t, in))
		want := []DeniedPath{{Path: "WS/tools/y", Source: "protected_metadata (alias.y of the repository at WS, set in WS/home/.gitconfig)", Given: "tools/y"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("\n got %+v\nwant %+v", got, want)
		}
	})
}

// TestGitSettingsPlaceholderChangesNothing: a placeholder (an empty
// directory a run makes where a protected path is missing, and where the
// directories above it are) leaves what is protected as it was: a run that
// decides beside it, or decides again while it stands, protects the same.
func TestGitSettingsPlaceholderChangesNothing(t *testing.T) {
	e := newTestEnv(t)
	gitDir(t, e, "[core]\n\tsshCommand = tools/ssh -F tools/cfg\n\tpager = ./bin/p\n[alias]\n\tx = !cat lib/a ./doc/b\n")
	decide := func() []string {
		var out []string
		for _, d := range hookDenials(e, mustResolve(t, e.input(wsPolicy(e.ws)))) {
			out = append(out, d.Path+" "+d.Source)
		}
		return out
	}
	before := decide()
	if len(before) != 3 {
		t.Fatalf("protected: %q", before)
	}
	for _, placeholder := range []string{"tools", "bin", "doc", "lib"} {
		mkdirs(t, e.ws+"/"+placeholder)
	}
	if after := decide(); !reflect.DeepEqual(after, before) {
		t.Errorf("with placeholders:\n got %q\nwant %q", after, before)
	}
}
