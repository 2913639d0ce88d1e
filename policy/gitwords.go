package policy

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// gitName is a path a git configuration value may name, as the value
// writes it ("~" and $HOME expanded, relative to the key's base unless
// absolute), with the rule that decides whether it does.
type gitName struct {
	Path string
	Rule gitNameRule
	// Via names the variable that named it when that is not the value's
	// own ("-c core.pager" inside an alias).
	Via string
}

// gitNameRule says when a gitName is protected.
type gitNameRule int

const (
	// nameProgram: a program git or the shell runs: protected whether it
	// exists or not, unless it is a directory with entries (a place that
	// runs nothing; an empty one may be a placeholder: see protectName).
	nameProgram gitNameRule = iota
	// nameLoaded: a file or directory git loads: protected whatever it is.
	nameLoaded
	// namePathLike: an argument with a slash: protected, unless it is a
	// directory with entries, when it is absolute, starts with "./" or
	// "../", or its first component exists (and is no empty directory);
	// otherwise it reads as a revision ("origin/main"), a pattern or a
	// sed expression rather than as a file the program could make.
	namePathLike
	// nameIfFile: a word without a slash (or one with a space, which may
	// be shell text as well): protected when a file (not a directory) of
	// that name exists; a missing one is a subcommand, an option's value
	// or a name (git-lfs's "clean"), not a file to reserve.
	nameIfFile
	// nameUnknownIn: Path is a directory in which the value names a file
	// the sandbox cannot know (through an expansion or a pattern): the run
	// is refused when it lies in a writable root.
	nameUnknownIn
)

// gitValueNames is what one configuration value names.
type gitValueNames struct {
	names []gitName
	// cds are the directories the value's shell text changes to ("cd
	// DIR"), relative ones taken from the key's base; unknownCd says one
	// of them is not known ("cd $X"). Relative paths are taken from each.
	cds       []string
	unknownCd bool
	// refuse says why what the value names cannot be determined at all
	// ("" when it can).
	refuse string
}

func (v *gitValueNames) add(path string, rule gitNameRule, via string) {
	if path != "" {
		v.names = append(v.names, gitName{Path: path, Rule: rule, Via: via})
	}
}

// gitValueContext is what the analysis of a value needs from its caller.
type gitValueContext struct {
	// home is $HOME ("" when unknown).
	home string
	// expandPath expands a value as git's interpolate_path does ("~",
	// "~user"); false when git cannot.
	expandPath func(string) (string, bool)
}

// maxGitValueDepth bounds nesting: shell text inside shell text ("sh -c
// '...'", "$(...)"), and "-c" inside aliases.
const maxGitValueDepth = 4

// gitValueNamesOf analyzes value, set for key k, with git's own rule for
// how it runs or loads that value.
func gitValueNamesOf(k *gitKey, value string, ctx gitValueContext) gitValueNames {
	var out gitValueNames
	analyzeGitValue(k, value, ctx, "", 0, &out)
	return out
}

func analyzeGitValue(k *gitKey, value string, ctx gitValueContext, via string, depth int, out *gitValueNames) {
	if depth > maxGitValueDepth {
		out.refuse = "nested more than " + strconv.Itoa(maxGitValueDepth) + " levels deep"
		return
	}
	if k.MaybeBool && isGitBool(value) {
		return
	}
	if k.Pathname {
		v, ok := ctx.expandPath(strings.TrimPrefix(value, ":(optional)"))
		if !ok {
			return // git cannot expand it, so runs or reads nothing
		}
		value = v
	}
	sh := func(text, firstPrefix string) {
		analyzeShell(text, ctx, firstPrefix, via, depth, out)
	}
	switch k.Value {
	case runShell:
		if value == "" {
			return
		}
		if strings.ContainsAny(value, gitShellMeta) {
			sh(value, "")
		} else {
			programWord(value, via, out)
		}
	case runProgram:
		programWord(value, via, out)
	case runAbsProgram:
		if strings.HasPrefix(value, "/") {
			out.add(value, nameProgram, via)
		}
	case runProxy:
		cmd, _, _ := strings.Cut(value, " for ")
		if cmd != "none" {
			programWord(cmd, via, out)
		}
	case runArgv:
		argvNames(splitCmdline(value), ctx, via, depth, out)
	case runExt:
		if rest, ok := strings.CutPrefix(value, "ext::"); ok {
			argvNames(splitExt(rest), ctx, via, depth, out)
		}
	case runCredential:
		switch {
		case value == "":
		case value[0] == '!':
			sh(value[1:], "")
		case strings.HasPrefix(value, "/"):
			sh(value, "")
		default:
			sh(value, "git-credential-")
		}
	case runAlias:
		if strings.HasPrefix(value, "!") {
			sh(value[1:], "")
			return
		}
		aliasNames(splitCmdline(value), ctx, via, depth, out)
	case runBang:
		if strings.HasPrefix(value, "!") {
			sh(value[1:], "")
		}
	case runDashed:
		if value != "" {
			programWord(k.Prefix+value, via, out)
		}
	case loadFile, loadDir, hooksDir, includeFile:
		if !strings.HasPrefix(value, "sha256//") {
			out.add(value, nameLoaded, via)
		}
	case writeTrace:
		if p, ok := strings.CutPrefix(value, "af_unix:"); ok {
			p = strings.TrimPrefix(strings.TrimPrefix(p, "stream:"), "dgram:")
			value = p
		}
		if strings.HasPrefix(value, "/") {
			out.add(value, nameLoaded, via)
		}
	}
}

// gitShellMeta are the characters that make git run a command through
// "sh -c" (run-command.c prepare_shell_cmd).
const gitShellMeta = "|&;<>()$`\\\"' \t\n*?[#~=%"

// programWord records a program run without a shell: looked up on PATH
// unless it contains a slash (run-command.c prepare_cmd).
func programWord(w, via string, out *gitValueNames) {
	if strings.Contains(w, "/") {
		out.add(w, nameProgram, via)
	} else {
		out.add(w, nameIfFile, via)
	}
}

// isGitBool reports whether git reads v as a boolean
// (git_parse_maybe_bool): true, yes, on, false, no, off, "", or an integer.
func isGitBool(v string) bool {
	switch strings.ToLower(v) {
	case "", "true", "yes", "on", "false", "no", "off":
		return true
	}
	return gitInteger().MatchString(v)
}

// gitInteger is an integer as git_parse_int reads one (a unit suffix
// allowed).
var gitInteger = lazyRegexp(`^[-+]?[0-9]+[kKmMgG]?$`)

// splitCmdline splits s into words as git's split_cmdline does: at
// whitespace outside quotes, with '...' and "..." quoting and a backslash
// quoting the next character outside single quotes. An unclosed quote
// (which git refuses) gives what was read.
func splitCmdline(s string) []string {
	var words []string
	var b strings.Builder
	quote := byte(0)
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'):
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
			continue
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case c == quote:
			quote = 0
		case c == '\\' && quote != '\'' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, b.String())
	}
	return words
}

// splitExt splits an ext:: command as git-remote-ext does: at spaces, "% "
// being a space and "%%" a percent sign.
func splitExt(s string) []string {
	var words []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '%'):
			i++
			b.WriteByte(s[i])
		case c == ' ':
			if b.Len() > 0 {
				words = append(words, b.String())
				b.Reset()
			}
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() > 0 {
		words = append(words, b.String())
	}
	return words
}

// argvNames records a program run without a shell and its arguments.
func argvNames(words []string, ctx gitValueContext, via string, depth int, out *gitValueNames) {
	for i, w := range words {
		if i == 0 {
			programWord(w, via, out)
			continue
		}
		classifyWord([]shSeg{{text: w, quoted: true}}, false, ctx, via, depth, out)
	}
}

// aliasNames records what an alias that is not shell text names: its
// words are git's own arguments, so "-c name=value" sets a variable (of
// this table, perhaps), "--exec-path=DIR" is where git finds its commands,
// and the first other word is the command (git-WORD when not built in).
func aliasNames(words []string, ctx gitValueContext, via string, depth int, out *gitValueNames) {
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-c" && i+1 < len(words):
			i++
			name, value, ok := strings.Cut(words[i], "=")
			if !ok {
				continue // a boolean true
			}
			e, ok := gitEntryOfName(name)
			if !ok {
				continue
			}
			if k := lookupGitKey(e); k != nil {
				analyzeGitValue(k, value, ctx, joinVia(via, "-c "+gitKeyName(e, k)), depth+1, out)
			}
		case strings.HasPrefix(w, "--exec-path="):
			out.add(strings.TrimPrefix(w, "--exec-path="), nameLoaded, via)
		case w == "-C" || w == "--git-dir" || w == "--work-tree" || w == "--namespace" || w == "--config-env":
			i++ // and its value
		case strings.HasPrefix(w, "-"):
		default:
			programWord("git-"+w, via, out)
			return
		}
	}
}

func joinVia(outer, inner string) string {
	if outer == "" {
		return inner
	}
	return outer + ", " + inner
}

// gitEntryOfName is the entry "section[.subsection].key" names, as git -c
// reads it: section and key lower-cased, the subsection as written.
func gitEntryOfName(name string) (gitConfigEntry, bool) {
	first := strings.IndexByte(name, '.')
	last := strings.LastIndexByte(name, '.')
	if first <= 0 || last == len(name)-1 {
		return gitConfigEntry{}, false
	}
	section := strings.ToLower(name[:first])
	if first != last {
		section += "." + name[first+1:last]
	}
	return gitConfigEntry{Section: section, Key: strings.ToLower(name[last+1:]), HasValue: true}, true
}

// shReserved are the shell's reserved words: a command follows them.
var shReserved = map[string]bool{"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"case": true, "esac": true, "while": true, "until": true, "for": true, "in": true, "{": true, "}": true, "!": true,
	"function": true, "select": true}

// shRunners are commands whose first argument that is not an option is a
// program or a script they run (or source).
var shRunners = map[string]bool{"exec": true, "command": true, "builtin": true, "nohup": true, "env": true, "nice": true,
	"time": true, "sudo": true, "xargs": true, ".": true, "source": true, "sh": true, "bash": true, "dash": true, "zsh": true,
	"ksh": true, "python": true, "python3": true, "perl": true, "ruby": true, "node": true}

var shAssignment = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*=`)

// analyzeShell records what shell text names: every word that is, or may
// be, a path. A word in a command's position is a program; a cd changes
// the directory relative paths are taken from. firstPrefix, when set, is
// prepended to the first command (credential helpers: "git credential-X"
// runs git-credential-X).
func analyzeShell(text string, ctx gitValueContext, firstPrefix, via string, depth int, out *gitValueNames) {
	if depth > maxGitValueDepth {
		out.refuse = "shell text nested more than " + strconv.Itoa(maxGitValueDepth) + " levels deep"
		return
	}
	tokens, nested := shLex(text)
	cmdPos, runner, redirect, cdNext := true, false, false, false
	for _, t := range tokens {
		if t.op != "" {
			redirect = t.op[0] == '<' || t.op[0] == '>'
			if !redirect {
				cmdPos, runner = true, false
			}
			if cdNext {
				cdNext = false
				cdTo(ctx.home, out)
			}
			continue
		}
		if cdNext {
			lit, ok := t.literal()
			switch {
			case !ok:
				out.unknownCd = true
			case lit == "-":
				// Back to where it was: a directory already counted.
			case strings.HasPrefix(lit, "-"):
				// An option (-P, -L): the directory follows.
				classifyWord(t.segs, false, ctx, via, depth, out)
				continue
			default:
				out.cds = append(out.cds, tildeExpand(lit, ctx))
			}
			cdNext = false
		}
		switch plain := t.plainLiteral(); {
		case redirect:
			redirect = false
			classifyWord(t.segs, false, ctx, via, depth, out)
		case cmdPos && shReserved[plain]:
		case cmdPos && shAssignment().MatchString(plain):
			classifyWord(t.segs, false, ctx, via, depth, out)
		case cmdPos && runner && strings.HasPrefix(plain, "-"):
		case cmdPos:
			if firstPrefix != "" {
				if lit, ok := t.literal(); ok {
					programWord(firstPrefix+lit, via, out)
				}
				firstPrefix = ""
				cmdPos = false
				continue
			}
			classifyWord(t.segs, true, ctx, via, depth, out)
			cdNext = plain == "cd" || plain == "pushd"
			runner = shRunners[plain]
			cmdPos = runner
		default:
			classifyWord(t.segs, false, ctx, via, depth, out)
		}
	}
	if cdNext {
		cdTo(ctx.home, out)
	}
	for _, n := range nested {
		analyzeShell(n, ctx, "", via, depth+1, out)
	}
}

// cdTo records a "cd" without an argument: to $HOME.
func cdTo(home string, out *gitValueNames) {
	if home == "" {
		out.unknownCd = true
	} else {
		out.cds = append(out.cds, home)
	}
}

// tildeExpand expands a leading "~" or "~user" as the shell does.
func tildeExpand(w string, ctx gitValueContext) string {
	if !strings.HasPrefix(w, "~") {
		return w
	}
	if x, ok := ctx.expandPath(w); ok {
		return x
	}
	return w
}

var shOptionOrAssignment = lazyRegexp(`^-{0,2}[A-Za-z_][A-Za-z0-9_.-]*=`)

// classifyWord records what one shell word names (see gitNameRule).
func classifyWord(segs []shSeg, program bool, ctx gitValueContext, via string, depth int, out *gitValueNames) {
	if len(segs) == 0 {
		return
	}
	segs = append([]shSeg(nil), segs...)
	// An assignment or an option with a value ("--file=x", "LESSOPEN=x"):
	// the value is what may be a path.
	if !segs[0].expand {
		if m := shOptionOrAssignment().FindString(segs[0].text); m != "" {
			segs[0].text = segs[0].text[len(m):]
			program = false
		} else if strings.HasPrefix(segs[0].text, "-") {
			// An option: only a short one with its value attached
			// ("-F./ssh_config") may name a path.
			text := segs[0].text
			if strings.HasPrefix(text, "--") || len(text) < 3 || !strings.Contains(joinSegs(segs), "/") {
				return
			}
			segs[0].text = text[2:]
			program = false
		}
		if segs[0].text == "" {
			if segs = segs[1:]; len(segs) == 0 {
				return
			}
		}
	}
	// $HOME and ${HOME} at the start are the home directory, as "~" is.
	if segs[0].expand && segs[0].name == "HOME" && ctx.home != "" {
		segs[0] = shSeg{text: ctx.home, quoted: true, known: true}
	}
	// "~" and "~user" at the start (unquoted).
	if !segs[0].expand && !segs[0].quoted && strings.HasPrefix(segs[0].text, "~") {
		head, _, slash := strings.Cut(segs[0].text, "/")
		if slash || len(segs) == 1 {
			if x, ok := ctx.expandPath(head); ok {
				rest := shSeg{text: segs[0].text[len(head):]}
				segs = append([]shSeg{{text: x, quoted: true, known: true}, rest}, segs[1:]...)
			}
		}
	}
	// Expansions whose value is not known here.
	for i, s := range segs {
		if !s.expand {
			continue
		}
		prefix := joinSegs(segs[:i])
		after := joinSegs(segs[i+1:])
		switch {
		case strings.Contains(prefix, "/"):
			out.add(prefix[:max(strings.LastIndexByte(prefix, '/'), 1)], nameUnknownIn, via)
		case strings.Contains(after, "/") && workTreeExpansion(s):
			if out.refuse == "" {
				out.refuse = quote(joinSegs(segs)) + " names a path that starts with " + s.text + ", which may be in the work tree and only git's shell knows"
			}
		}
		// A path that starts with a variable of the user's environment
		// or an argument the user gives ($TMPDIR/x, $1/x) is theirs, not
		// the program's.
		return
	}
	text := joinSegs(segs)
	if text == "" {
		return
	}
	var written strings.Builder // the text but for the directories put in
	for _, s := range segs {
		if !s.known {
			written.WriteString(s.text)
		}
	}
	if strings.ContainsAny(written.String(), "\n;&|()<>$`") {
		// Shell text itself ("sh -c './a && ./b'"): what it names counts.
		analyzeShell(text, ctx, "", via, depth+1, out)
		return
	}
	if strings.ContainsAny(written.String(), " \t") {
		// Shell text ("sh -c 'tools/x.sh --fix'"), or a path with a
		// space in it, which counts where such a file exists.
		analyzeShell(text, ctx, "", via, depth+1, out)
		out.add(text, nameIfFile, via)
		return
	}
	if slash := strings.IndexByte(text, '/'); strings.Contains(text, "://") ||
		!strings.HasPrefix(text, "/") && strings.Contains(text, ":") && (slash < 0 || strings.IndexByte(text, ':') < slash) {
		return // a URL or host:path, not a local path (git's own rule)
	}
	// A pattern the shell expands to the files that match.
	if at := unquotedGlob(segs); at >= 0 {
		if dir := strings.LastIndexByte(text[:at], '/'); dir >= 0 {
			out.add(text[:max(dir, 1)], nameUnknownIn, via)
		}
		return
	}
	switch {
	case !strings.Contains(text, "/"):
		out.add(text, nameIfFile, via)
	case program:
		out.add(text, nameProgram, via)
	default:
		out.add(text, namePathLike, via)
	}
}

// workTreeExpansion reports whether s may stand for a directory of the
// work tree: a command's output ($(pwd), `git rev-parse --show-prefix`), or
// a variable the shell or git sets to one (git sets GIT_PREFIX for
// aliases).
func workTreeExpansion(s shSeg) bool {
	switch s.name {
	case "":
		return strings.HasPrefix(s.text, "$(") || strings.HasPrefix(s.text, "`") || strings.HasPrefix(s.text, "${")
	case "PWD", "OLDPWD", "GIT_PREFIX", "GIT_WORK_TREE", "GIT_DIR", "GIT_COMMON_DIR":
		return true
	}
	return false
}

func joinSegs(segs []shSeg) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.text)
	}
	return b.String()
}

// unquotedGlob returns the offset in the word's text of its first
// unquoted "*", "?" or "[...]", -1 when there is none.
func unquotedGlob(segs []shSeg) int {
	off := 0
	for _, s := range segs {
		if !s.quoted && !s.expand {
			for i := 0; i < len(s.text); i++ {
				c := s.text[i]
				if c == '*' || c == '?' || c == '[' && strings.IndexByte(s.text[i+1:], ']') >= 0 {
					return off + i
				}
			}
		}
		off += len(s.text)
	}
	return -1
}

// lazyRegexp compiles expr on first use: compiled at package init, the
// three in this file cost some 80 µs of every start of the helper's Go
// runtime, whether or not it reads a git setting.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
