package policy

import (
	"reflect"
	"strings"
	"testing"
)

// keyOf is the table's entry for "section[.sub].key".
func keyOf(t *testing.T, name string) *gitKey {
	t.Helper()
	e, ok := gitEntryOfName(name)
	if !ok {
		t.Fatalf("%s: not a variable name", name)
	}
	k := lookupGitKey(e)
	if k == nil {
		t.Fatalf("%s: not in gitKeys", name)
	}
	return k
}

var testValueContext = gitValueContext{
	home: "/h",
	expandPath: func(v string) (string, bool) {
		switch {
		case v == "~" || strings.HasPrefix(v, "~/"):
			return "/h" + v[1:], true
		case strings.HasPrefix(v, "~"):
			return "", false
		}
		return v, true
	},
}

// names renders what a value names: "RULE:path" each, "cd:dir",
// "cd:?", "refuse".
func names(k *gitKey, value string) []string {
	v := gitValueNamesOf(k, value, testValueContext)
	var out []string
	rule := map[gitNameRule]string{nameProgram: "program", nameLoaded: "loaded", namePathLike: "pathlike", nameIfFile: "iffile", nameUnknownIn: "unknownin"}
	for _, n := range v.names {
		s := rule[n.Rule] + ":" + n.Path
		if n.Via != "" {
			s += " via " + n.Via
		}
		out = append(out, s)
	}
	for _, c := range v.cds {
		out = append(out, "cd:"+c)
	}
	if v.unknownCd {
		out = append(out, "cd:?")
	}
	if v.refuse != "" {
		out = append(out, "refuse")
	}
	return out
}

func TestGitValueNames(t *testing.T) {
	for _, tt := range []struct {
		key, value string
		want       []string
	}{
		// git runs a value without shell metacharacters itself: a
		// program with a slash, or one looked up on PATH.
		{"core.fsmonitor", "tools/fsmonitor.sh", []string{"program:tools/fsmonitor.sh"}},
		{"core.fsmonitor", "true", nil},
		{"core.fsmonitor", "0", nil},
		{"core.fsmonitor", "~/bin/watch", []string{"program:/h/bin/watch"}},
		{"core.pager", "delta", []string{"iffile:delta"}},
		{"core.pager", "tools/pager.sh", []string{"program:tools/pager.sh"}},
		{"pager.log", "false", nil},
		// Through sh -c: each command's program, and arguments that are
		// or may be paths.
		{"core.pager", "less -FRX", []string{"iffile:less"}},
		{"core.editor", "code --wait", []string{"iffile:code"}},
		{"core.sshCommand", "tools/ssh -F /dev/null -i ~/.ssh/k", []string{"program:tools/ssh", "pathlike:/dev/null", "pathlike:/h/.ssh/k"}},
		{"core.sshCommand", "ssh -F./ssh_config -i~/.ssh/k", []string{"iffile:ssh", "pathlike:./ssh_config", "pathlike:/h/.ssh/k"}},
		{"core.pager", "diff-so-fancy | less --tabs=4 -RFX", []string{"iffile:diff-so-fancy", "iffile:less", "iffile:4"}},
		{"filter.lfs.clean", "git-lfs clean -- %f", []string{"iffile:git-lfs", "iffile:clean", "iffile:%f"}},
		{"filter.x.smudge", "sh scripts/smudge.sh %f", []string{"iffile:sh", "program:scripts/smudge.sh", "iffile:%f"}},
		{"diff.x.textconv", "./a&&./b;c/d e/f", []string{"program:./a", "program:./b", "program:c/d", "pathlike:e/f"}},
		{"merge.x.driver", "tool --out=out/%A %O > log/merge.txt 2>&1", []string{"iffile:tool", "pathlike:out/%A", "iffile:%O", "pathlike:log/merge.txt", "iffile:1"}},
		{"core.editor", `"my tools/edit" --wait`, []string{"iffile:my", "pathlike:tools/edit", "iffile:my tools/edit"}},
		{"core.pager", "'/opt/pager' 'x'\"y\"", []string{"program:/opt/pager", "iffile:xy"}},
		{"core.pager", "LESS=R ./pager # a comment ./not", []string{"iffile:R", "program:./pager"}},
		{"core.pager", "env LESS=R tools/p", []string{"iffile:env", "iffile:R", "program:tools/p"}},
		{"core.pager", "git log origin/main https://x.example/a/b host:dir/x", []string{"iffile:git", "iffile:log", "pathlike:origin/main"}},
		// Expansions: $HOME is known; a path built from another, or a
		// pattern in a directory, is named as that directory.
		{"core.pager", "$HOME/bin/p \"${HOME}/q\"", []string{"program:/h/bin/p", "pathlike:/h/q"}},
		{"core.pager", "tools/$NAME", []string{"unknownin:tools"}},
		{"core.pager", "/opt/$V/p", []string{"unknownin:/opt"}},
		{"core.pager", "$PWD/x.sh", []string{"refuse"}},
		{"core.pager", "cat ${GIT_PREFIX:-.}/x", []string{"iffile:cat", "refuse"}},
		{"core.pager", "cat \"$GIT_PREFIX\"/x $TMPDIR/y $1/z", []string{"iffile:cat", "refuse"}},
		{"core.pager", "cat $TMPDIR/y $1/z pull/$1/head:pr-$1", []string{"iffile:cat", "unknownin:pull"}},
		{"alias.x", "!\"$(pwd)\"/tools/x.sh", []string{"iffile:pwd", "refuse"}},
		{"alias.x", "!\"$(git rev-parse --show-toplevel)\"/tools/x.sh", []string{"program:./tools/x.sh"}},
		{"alias.x", "!cd `git  rev-parse --show-toplevel` && tools/x", []string{"iffile:cd", "iffile:.", "program:tools/x", "cd:."}},
		{"alias.x", "!echo $1 \"$@\" password=$TOKEN", []string{"iffile:echo"}},
		{"alias.x", "!sh tools/*.sh *.txt", []string{"iffile:sh", "unknownin:tools"}},
		{"alias.x", "![ -x tools/a ] && echo [a]", []string{"iffile:[", "pathlike:tools/a", "iffile:]", "iffile:echo"}},
		// Command substitutions and nested shell text are shell text.
		{"credential.helper", "!f() { echo password=$(cat ./secret.sh); }; f", []string{"iffile:f", "iffile:echo", "iffile:f", "iffile:cat", "pathlike:./secret.sh"}},
		{"alias.x", "!sh -c './a; tools/b' -", []string{"iffile:sh", "program:./a", "program:tools/b"}},
		{"alias.x", "!bash -c 'tools/x --fix'", []string{"iffile:bash", "program:tools/x", "iffile:tools/x --fix"}},
		// cd changes where relative paths are taken from.
		{"alias.x", "!cd sub && ./run", []string{"iffile:cd", "iffile:sub", "program:./run", "cd:sub"}},
		{"alias.x", "!cd \"${GIT_PREFIX:-.}\" && ./run", []string{"iffile:cd", "program:./run", "cd:?"}},
		{"alias.x", "!cd; ./run", []string{"iffile:cd", "program:./run", "cd:/h"}},
		{"alias.x", "!cd -P sub && ./run", []string{"iffile:cd", "iffile:sub", "program:./run", "cd:sub"}},
		// Credential helpers: "!" is shell text, an absolute path a
		// command, anything else git-credential-NAME.
		{"credential.helper", "cache --timeout=3600", []string{"iffile:git-credential-cache", "iffile:3600"}},
		{"credential.helper", "./x", []string{"program:git-credential-./x"}},
		{"credential.https://e.example.helper", "/usr/lib/git-credential-libsecret", []string{"program:/usr/lib/git-credential-libsecret"}},
		{"credential.helper", "!tools/cred get", []string{"program:tools/cred", "iffile:get"}},
		{"credential.helper", "", nil},
		// Aliases that are not shell text are git's arguments.
		{"alias.st", "status -sb", []string{"iffile:git-status"}},
		{"alias.w", "-c core.pager=tools/p -c user.name=x --exec-path=bin log", []string{"program:tools/p via -c core.pager", "loaded:bin", "iffile:git-log"}},
		{"alias.x.command", "!tools/x", []string{"program:tools/x"}},
		// No shell: the whole value, or split as git splits it.
		{"core.askPass", "tools/ask pass", []string{"program:tools/ask pass"}},
		{"gpg.program", "~/bin/gpg", []string{"program:/h/bin/gpg"}},
		{"gpg.ssh.program", "tools/keygen", []string{"program:tools/keygen"}},
		{"gpg.ssh.defaultKeyCommand", "\"tools/key cmd\" --pub tools/k", []string{"program:tools/key cmd", "pathlike:tools/k"}},
		{"core.gitProxy", "tools/proxy for example.com", []string{"program:tools/proxy"}},
		{"core.gitProxy", "none for example.com", nil},
		{"remote.origin.url", "ext::tools/remote %S% foo", []string{"program:tools/remote", "iffile:%S", "iffile:foo", "iffile:%S foo"}},
		{"remote.origin.url", "https://example.com/x", nil},
		{"remote.origin.vcs", "./hg", []string{"program:git-remote-./hg"}},
		{"pull.twohead", "ort", []string{"iffile:git-merge-ort"}},
		{"submodule.m.update", "!tools/up", []string{"program:tools/up"}},
		{"submodule.m.update", "rebase", nil},
		{"sendemail.smtpServer", "/usr/sbin/sendmail", []string{"program:/usr/sbin/sendmail"}},
		{"sendemail.work.smtpServer", "smtp.example.com", nil},
		// Files git loads.
		{"core.excludesFile", "~/.gitignore", []string{"loaded:/h/.gitignore"}},
		{"gpg.ssh.allowedSignersFile", ":(optional).signers", []string{"loaded:.signers"}},
		{"http.https://e.example.sslCAInfo", "certs/ca.pem", []string{"loaded:certs/ca.pem"}},
		{"http.pinnedPubkey", "sha256//abc", nil},
		{"init.templateDir", "~/tmpl", []string{"loaded:/h/tmpl"}},
		{"trace2.eventTarget", "af_unix:stream:/ws/sock", []string{"loaded:/ws/sock"}},
		{"trace2.normalTarget", "1", nil},
		{"hook.lint.command", "tools/lint.sh --staged", []string{"program:tools/lint.sh"}},
	} {
		if got := names(keyOf(t, tt.key), tt.value); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s = %q:\n got %q\nwant %q", tt.key, tt.value, got, tt.want)
		}
	}
}

func TestGitKeysLookup(t *testing.T) {
	for _, tt := range []struct {
		section, key string
		want         string // the table's Name, "" for none
	}{
		{"core", "fsmonitor", "core.fsmonitor"},
		{"core.x", "fsmonitor", ""},
		{"filter.lfs", "clean", "filter.<driver>.clean"},
		{"filter", "clean", ""},
		{"credential", "helper", "credential.[<url>.]helper"},
		{"credential.https://x", "helper", "credential.[<url>.]helper"},
		{"alias", "anything", "alias.*"},
		{"alias.x", "command", "alias.<name>.command"},
		{"alias.x", "other", ""},
		{"gpg.ssh", "defaultkeycommand", "gpg.ssh.defaultKeyCommand"},
		{"gpg.SSH", "defaultkeycommand", ""},
		{"gpg.ssh", "program", "gpg.<format>.program"},
		{"includeif.gitdir:/x/", "path", "includeIf.<condition>.path"},
		{"include", "path", "include.path"},
		{"user", "name", ""},
	} {
		got := ""
		if k := lookupGitKey(gitConfigEntry{Section: tt.section, Key: tt.key}); k != nil {
			got = k.Name
		}
		if got != tt.want {
			t.Errorf("%s.%s: got %q, want %q", tt.section, tt.key, got, tt.want)
		}
	}
}

func TestSplitCmdline(t *testing.T) {
	for in, want := range map[string][]string{
		`a  b`:         {"a", "b"},
		`"a b" 'c d'`:  {"a b", "c d"},
		`a\ b "x\"y"`:  {"a b", `x"y`},
		`'a\b'`:        {`a\b`},
		` `:            nil,
		`-c k=v  "" x`: {"-c", "k=v", "", "x"},
	} {
		if got := splitCmdline(in); !reflect.DeepEqual(got, want) {
			t.Errorf("splitCmdline(%q) = %q, want %q", in, got, want)
		}
	}
}
