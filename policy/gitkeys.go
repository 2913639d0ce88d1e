package policy

import "strings"

// gitKey is one configuration variable whose value git runs, or a file or
// directory git loads to decide what it runs, trusts, checks or hides: what
// a sandboxed program must not be able to write where the value names the
// workspace.
type gitKey struct {
	// Name is the variable as git-config(1) writes it: "core.fsmonitor",
	// "filter.<driver>.clean"; "credential.[<url>.]helper" matches with
	// and without a subsection, "alias.*" any variable of [alias] (one
	// without a subsection).
	Name string
	// Value says how git uses the value.
	Value gitValueKind
	// Base is the directory a relative path in the value is taken from.
	Base gitBase
	// Pathname: git expands the value as a path first (git_config_pathname:
	// "~", "~user", ":(optional)"); a shell expands "~" itself anyway.
	Pathname bool
	// MaybeBool: a value git reads as a boolean ("true", "off", "0", "")
	// is not a command (git_parse_maybe_bool).
	MaybeBool bool
	// Prefix is prepended to a runDashed value: the program git runs.
	Prefix string
	// Doc is where git documents the variable and how it runs the value.
	Doc string

	section, key string // lower-cased; key "" for any
	keyName      string // key as Name spells it
	sub          gitSubMatch
	subName      string // the subsection of subLiteral
}

// gitValueKind is how git uses a variable's value.
type gitValueKind int

const (
	// runShell: a command run as git's run_command with use_shell: a
	// value with one of the shell's metacharacters runs through "sh -c",
	// otherwise it is the program itself (looked up on PATH unless it
	// contains a slash).
	runShell gitValueKind = iota
	// runProgram: the whole value is the program, run without a shell.
	runProgram
	// runAbsProgram: the value is a program when it is an absolute path
	// (otherwise it is a host name).
	runAbsProgram
	// runProxy: core.gitProxy, "COMMAND for DOMAIN" or "COMMAND".
	runProxy
	// runArgv: split into words as git's split_cmdline does (quotes, no
	// shell), the first being the program.
	runArgv
	// runExt: a remote URL "ext::COMMAND ARGS" runs COMMAND
	// (git-remote-ext); other URLs run nothing.
	runExt
	// runCredential: credential.helper: "!text" is shell text, an
	// absolute path a command, anything else "git credential-VALUE".
	runCredential
	// runAlias: an alias: "!text" is shell text; otherwise git's own
	// arguments, whose "-c name=value" set variables of this table too
	// and whose "--exec-path=DIR" is where git finds its commands.
	runAlias
	// runBang: only "!text" runs (as shell text); other values name a
	// built-in mode.
	runBang
	// runDashed: git runs the program Prefix+value (a helper or a merge
	// strategy), looked up on PATH unless it contains a slash.
	runDashed
	// loadFile: a file git loads.
	loadFile
	// writeTrace: trace2's targets: an absolute path or
	// "af_unix:[stream:|dgram:]PATH" is a file git writes (other values
	// are file descriptors or booleans).
	writeTrace
	// loadDir: a directory git loads files from.
	loadDir
	// hooksDir: core.hooksPath, the directory git runs hooks from
	// (see protectHookDir).
	hooksDir
	// includeFile: include.path and includeIf.<condition>.path: a
	// configuration file read as part of the including one, relative to
	// the including file's directory.
	includeFile
)

// gitBase is the directory git runs a command in, against which a relative
// path in the value is resolved.
type gitBase int

const (
	// baseTop: the top of the work tree: git changes to it before running
	// any command of a repository (setup_git_directory), and runs
	// fsmonitor, hooks and shell aliases there explicitly.
	baseTop gitBase = iota
	// baseGitDir: the git directory (upload-pack enters it).
	baseGitDir
	// baseUnknown: wherever the user starts git, or a directory the
	// value's own configuration names (a submodule's): a relative path
	// cannot be placed, so a value naming one is refused.
	baseUnknown
)

// gitSubMatch says whether a variable has a subsection.
type gitSubMatch int

const (
	subNone     gitSubMatch = iota
	subAny                  // any subsection ("filter.<driver>.clean")
	subOptional             // with or without one ("credential.[<url>.]helper")
	subLiteral              // this one ("gpg.ssh.defaultKeyCommand")
)

// gitKeys is the one list of the variables git runs or loads, from
// git-config(1) of git 2.55.0-rc (Documentation/config/*.adoc of git's
// master at 1a3e64c, 2026-08-20; the variables git 2.39 here documents are
// a subset), git-archive(1) (tar.<format>.command), git-send-email(1) and
// gitattributes(5) (filter.<driver>.process); how each value is run, and
// where, checked against git's sources of the same commit (run-command.c
// prepare_shell_cmd and prepare_cmd; the callers named in Doc).
//
// Not listed, because what they load only shows text the user reads
// (commit.template, mailmap.file, blame.ignoreRevsFile, diff.orderFile,
// format.signatureFile) or is git-p4's and git-svn's own: see the README.
var gitKeys = []gitKey{
	{Name: "core.hooksPath", Value: hooksDir, Pathname: true, Doc: "git-config(1) core.hooksPath; githooks(5): hooks run from the top of the work tree"},
	{Name: "include.path", Value: includeFile, Pathname: true, Doc: "git-config(1) INCLUDES; config.c handle_path_include"},
	{Name: "includeIf.<condition>.path", Value: includeFile, Pathname: true, Doc: "git-config(1) CONDITIONAL INCLUDES (every condition counts: one of them may hold when git runs)"},

	{Name: "core.fsmonitor", Value: runShell, Pathname: true, MaybeBool: true, Doc: "git-config(1) core.fsmonitor; fsmonitor.c query_fsmonitor_hook (use_shell, dir = the work tree)"},
	{Name: "core.sshCommand", Value: runShell, Doc: "git-config(1) core.sshCommand; connect.c fill_ssh_args (use_shell)"},
	{Name: "core.gitProxy", Value: runProxy, Doc: "git-config(1) core.gitProxy; connect.c git_proxy_connect (no shell)"},
	{Name: "core.askPass", Value: runProgram, Doc: "git-config(1) core.askPass; prompt.c do_askpass (no shell)"},
	{Name: "core.editor", Value: runShell, Doc: "git-config(1) core.editor; editor.c launch_specified_editor (use_shell)"},
	{Name: "sequence.editor", Value: runShell, Doc: "git-config(1) sequence.editor; editor.c launch_sequence_editor"},
	{Name: "core.pager", Value: runShell, Doc: "git-config(1) core.pager; pager.c setup_pager (use_shell)"},
	{Name: "pager.*", Value: runShell, MaybeBool: true, Doc: "git-config(1) pager.<cmd>: a boolean or the pager to use"},
	{Name: "core.alternateRefsCommand", Value: runShell, Doc: "git-config(1) core.alternateRefsCommand; odb.c fill_alternate_refs_command (use_shell)"},
	{Name: "core.excludesFile", Value: loadFile, Pathname: true, Doc: "git-config(1) core.excludesFile: patterns that hide files from git status"},
	{Name: "core.attributesFile", Value: loadFile, Pathname: true, Doc: "git-config(1) core.attributesFile: attributes that choose filter, diff and merge drivers"},
	{Name: "init.templateDir", Value: loadDir, Base: baseUnknown, Pathname: true, Doc: "git-config(1) init.templateDir: copied into every new repository, hooks included (git init and clone run anywhere)"},

	{Name: "alias.*", Value: runAlias, Doc: "git-config(1) alias.*: \"!\" is shell text run from the top of the work tree; git.c handle_alias"},
	{Name: "alias.<name>.command", Value: runAlias, Doc: "git-config(1) alias.*.command (git 2.54)"},
	{Name: "credential.[<url>.]helper", Value: runCredential, Doc: "git-config(1) credential.helper; gitcredentials(7); credential.c credential_do (use_shell)"},
	{Name: "diff.external", Value: runShell, Doc: "git-config(1) diff.external; diff.c run_external_diff (use_shell)"},
	{Name: "diff.<driver>.command", Value: runShell, Doc: "git-config(1) diff.<driver>.command; gitattributes(5)"},
	{Name: "diff.<driver>.textconv", Value: runShell, Doc: "git-config(1) diff.<driver>.textconv; diff.c run_textconv (use_shell)"},
	{Name: "difftool.<tool>.cmd", Value: runShell, Doc: "git-config(1) difftool.<tool>.cmd (evaluated by git-difftool--helper)"},
	{Name: "difftool.<tool>.path", Value: runProgram, Doc: "git-config(1) difftool.<tool>.path"},
	{Name: "mergetool.<tool>.cmd", Value: runShell, Doc: "git-config(1) mergetool.<tool>.cmd (git-mergetool changes to the top first)"},
	{Name: "mergetool.<tool>.path", Value: runProgram, Doc: "git-config(1) mergetool.<tool>.path"},
	{Name: "filter.<driver>.clean", Value: runShell, Doc: "git-config(1) filter.<driver>.clean; convert.c apply_single_file_filter (use_shell)"},
	{Name: "filter.<driver>.smudge", Value: runShell, Doc: "git-config(1) filter.<driver>.smudge"},
	{Name: "filter.<driver>.process", Value: runShell, Doc: "gitattributes(5) filter.<driver>.process; sub-process.c (use_shell)"},
	{Name: "merge.<driver>.driver", Value: runShell, Doc: "git-config(1) merge.<driver>.driver; merge-ll.c ll_ext_merge (use_shell)"},
	{Name: "gpg.program", Value: runProgram, Pathname: true, Doc: "git-config(1) gpg.program; gpg-interface.c (no shell)"},
	{Name: "gpg.<format>.program", Value: runProgram, Pathname: true, Doc: "git-config(1) gpg.<format>.program (openpgp, x509, ssh)"},
	{Name: "gpg.ssh.defaultKeyCommand", Value: runArgv, Doc: "git-config(1) gpg.ssh.defaultKeyCommand; gpg-interface.c get_default_ssh_signing_key (split_cmdline)"},
	{Name: "gpg.ssh.allowedSignersFile", Value: loadFile, Pathname: true, Doc: "git-config(1) gpg.ssh.allowedSignersFile: the keys signatures are trusted for, relative to the top"},
	{Name: "gpg.ssh.revocationFile", Value: loadFile, Pathname: true, Doc: "git-config(1) gpg.ssh.revocationFile"},
	{Name: "hook.<name>.command", Value: runShell, Doc: "git-config(1) hook.<friendly-name>.command (git 2.54); hook.c (use_shell)"},
	{Name: "gc.recentObjectsHook", Value: runShell, Doc: "git-config(1) gc.recentObjectsHook; reachable.c (use_shell)"},
	{Name: "uploadpack.packObjectsHook", Value: runShell, Base: baseGitDir, Doc: "git-config(1) uploadpack.packObjectsHook; upload-pack.c (use_shell, in the git directory)"},
	{Name: "imap.tunnel", Value: runShell, Doc: "git-config(1) imap.tunnel; imap-send.c (use_shell)"},
	{Name: "interactive.diffFilter", Value: runShell, Doc: "git-config(1) interactive.diffFilter; add-patch.c (use_shell)"},
	{Name: "trailer.<key>.cmd", Value: runShell, Doc: "git-config(1) trailer.<key-alias>.cmd; trailer.c (use_shell)"},
	{Name: "trailer.<key>.command", Value: runShell, Doc: "git-config(1) trailer.<key-alias>.command"},
	{Name: "tar.<format>.command", Value: runShell, Doc: "git-archive(1) tar.<format>.command; archive-tar.c (use_shell)"},
	{Name: "remote.<name>.uploadpack", Value: runShell, Doc: "git-config(1) remote.<name>.uploadpack: run locally for a local remote; connect.c git_connect (use_shell)"},
	{Name: "remote.<name>.receivepack", Value: runShell, Doc: "git-config(1) remote.<name>.receivepack"},
	{Name: "remote.<name>.url", Value: runExt, Doc: "git-remote-ext(1): an ext:: URL runs its command"},
	{Name: "remote.<name>.pushurl", Value: runExt, Doc: "git-remote-ext(1)"},
	{Name: "remote.<name>.vcs", Value: runDashed, Prefix: "git-remote-", Doc: "git-config(1) remote.<name>.vcs: the helper git-remote-<vcs>"},
	{Name: "pull.twohead", Value: runDashed, Prefix: "git-merge-", Doc: "git-config(1) pull.twohead: the strategy git-merge-<strategy>"},
	{Name: "pull.octopus", Value: runDashed, Prefix: "git-merge-", Doc: "git-config(1) pull.octopus"},
	{Name: "guitool.<name>.cmd", Value: runShell, Doc: "git-config(1) guitool.<name>.cmd"},
	{Name: "instaweb.httpd", Value: runShell, Base: baseUnknown, Doc: "git-config(1) instaweb.httpd"},
	{Name: "man.<tool>.cmd", Value: runShell, Base: baseUnknown, Doc: "git-config(1) man.<tool>.cmd (git help runs where it is started)"},
	{Name: "man.<tool>.path", Value: runProgram, Base: baseUnknown, Doc: "git-config(1) man.<tool>.path"},
	{Name: "browser.<tool>.cmd", Value: runShell, Base: baseUnknown, Doc: "git-config(1) browser.<tool>.cmd (git web--browse)"},
	{Name: "browser.<tool>.path", Value: runProgram, Base: baseUnknown, Doc: "git-config(1) browser.<tool>.path"},
	{Name: "submodule.<name>.update", Value: runBang, Base: baseUnknown, Doc: "git-config(1) submodule.<name>.update: \"!command\" runs in the submodule; submodule--helper.c (use_shell)"},
	{Name: "sendemail.[<identity>.]sendmailCmd", Value: runShell, Base: baseUnknown, Doc: "git-send-email(1) --sendmail-cmd (git send-email runs where it is started)"},
	{Name: "sendemail.[<identity>.]smtpServer", Value: runAbsProgram, Base: baseUnknown, Doc: "git-send-email(1) --smtp-server: a full pathname is a sendmail-like program"},
	{Name: "sendemail.[<identity>.]ccCmd", Value: runShell, Base: baseUnknown, Doc: "git-config(1) sendemail.ccCmd"},
	{Name: "sendemail.[<identity>.]toCmd", Value: runShell, Base: baseUnknown, Doc: "git-config(1) sendemail.toCmd"},
	{Name: "sendemail.[<identity>.]headerCmd", Value: runShell, Base: baseUnknown, Doc: "git-config(1) sendemail.headerCmd"},
	{Name: "sendemail.[<identity>.]smtpSSLCertPath", Value: loadFile, Base: baseUnknown, Pathname: true, Doc: "git-config(1) sendemail.smtpSSLCertPath: the certificates trusted"},

	{Name: "http.[<url>.]sslCAInfo", Value: loadFile, Pathname: true, Doc: "git-config(1) http.sslCAInfo: the certificates trusted"},
	{Name: "http.[<url>.]sslCAPath", Value: loadDir, Pathname: true, Doc: "git-config(1) http.sslCAPath"},
	{Name: "http.[<url>.]proxySSLCAInfo", Value: loadFile, Pathname: true, Doc: "git-config(1) http.proxySSLCAInfo"},
	{Name: "http.[<url>.]pinnedPubkey", Value: loadFile, Pathname: true, Doc: "git-config(1) http.pinnedPubkey (a path, unless sha256//)"},
	{Name: "http.[<url>.]sslCert", Value: loadFile, Pathname: true, Doc: "git-config(1) http.sslCert"},
	{Name: "http.[<url>.]sslKey", Value: loadFile, Pathname: true, Doc: "git-config(1) http.sslKey"},
	{Name: "http.[<url>.]proxySSLCert", Value: loadFile, Pathname: true, Doc: "git-config(1) http.proxySSLCert"},
	{Name: "http.[<url>.]proxySSLKey", Value: loadFile, Pathname: true, Doc: "git-config(1) http.proxySSLKey"},
	{Name: "http.[<url>.]cookieFile", Value: loadFile, Pathname: true, Doc: "git-config(1) http.cookieFile: cookies sent to the server"},
	{Name: "fsck.skipList", Value: loadFile, Pathname: true, Doc: "git-config(1) fsck.skipList: objects whose checks are skipped"},
	{Name: "fetch.fsck.skipList", Value: loadFile, Pathname: true, Doc: "git-config(1) fetch.fsck.skipList"},
	{Name: "receive.fsck.skipList", Value: loadFile, Pathname: true, Doc: "git-config(1) receive.fsck.skipList"},
	{Name: "trace2.normalTarget", Value: writeTrace, Doc: "git-config(1) trace2.normalTarget: a file git writes (a link there would redirect it)"},
	{Name: "trace2.perfTarget", Value: writeTrace, Doc: "git-config(1) trace2.perfTarget"},
	{Name: "trace2.eventTarget", Value: writeTrace, Doc: "git-config(1) trace2.eventTarget"},
}

func init() {
	for i := range gitKeys {
		k := &gitKeys[i]
		name := k.Name
		if before, after, ok := strings.Cut(name, ".[<"); ok {
			_, key, _ := strings.Cut(after, ">.]")
			name, k.sub = before+"."+key, subOptional
		}
		parts := strings.Split(name, ".")
		k.section = strings.ToLower(parts[0])
		k.keyName = parts[len(parts)-1]
		switch {
		case len(parts) == 2 && parts[1] == "*":
		case len(parts) == 2:
			k.key = strings.ToLower(parts[1])
		case len(parts) == 3 && strings.HasPrefix(parts[1], "<"):
			k.sub, k.key = subAny, strings.ToLower(parts[2])
		case len(parts) == 3:
			k.sub, k.subName, k.key = subLiteral, parts[1], strings.ToLower(parts[2])
		default:
			panic("policy: git key " + k.Name + ": not section.key or section.<sub>.key")
		}
	}
}

// lookupGitKey returns the table's entry for a configuration entry, nil
// when git neither runs nor loads its value.
func lookupGitKey(e gitConfigEntry) *gitKey {
	base, sub, hasSub := strings.Cut(e.Section, ".")
	for i := range gitKeys {
		k := &gitKeys[i]
		if k.section != base || (k.key != "" && k.key != e.Key) {
			continue
		}
		switch k.sub {
		case subNone:
			if hasSub {
				continue
			}
		case subAny:
			if !hasSub {
				continue
			}
		case subLiteral:
			if !hasSub || sub != k.subName {
				continue
			}
		}
		return k
	}
	return nil
}

// gitKeyName is the variable of e, whose entry in the table is k, as
// git-config(1) spells it: "filter.lfs.clean", "core.sshCommand",
// "alias.st".
func gitKeyName(e gitConfigEntry, k *gitKey) string {
	section, _, _ := strings.Cut(k.Name, ".")
	if _, sub, ok := strings.Cut(e.Section, "."); ok {
		section += "." + sub
	}
	if k.key == "" {
		return section + "." + e.Key
	}
	return section + "." + k.keyName
}
