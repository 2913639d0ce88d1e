package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Instruction is one logical instruction of a Dockerfile.
type Instruction struct {
	Line int    // where it starts, 1-based
	Cmd  string // upper case: FROM, RUN, ...
	Args string // the rest, continuations joined, comments inside removed
	// Exec holds the JSON (exec) form's words, when Args is one.
	Exec []string
}

// Problem is one rule broken at a line.
type Problem struct {
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%d: %s", p.Line, p.Msg) }

var known = map[string]bool{
	"ADD": true, "ARG": true, "CMD": true, "COPY": true, "ENTRYPOINT": true,
	"ENV": true, "EXPOSE": true, "FROM": true, "HEALTHCHECK": true, "LABEL": true,
	"MAINTAINER": true, "ONBUILD": true, "RUN": true, "SHELL": true,
	"STOPSIGNAL": true, "USER": true, "VOLUME": true, "WORKDIR": true,
}

var directive = regexp.MustCompile(`^#\s*([a-zA-Z]+)\s*=\s*(.*?)\s*$`)

// Parse splits a Dockerfile into instructions, as the Dockerfile reference
// describes the format: parser directives at the very top, "#" comments
// only at the start of a line (also between continued lines), a backslash
// at the end of a line continuing the instruction.
func Parse(src string) ([]Instruction, []Problem) {
	var out []Instruction
	var probs []Problem
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	directives := true
	var cur *Instruction
	var parts []string
	finish := func() {
		if cur == nil {
			return
		}
		cur.Args = strings.TrimSpace(strings.Join(parts, " "))
		if strings.HasPrefix(cur.Args, "[") {
			var words []string
			if err := json.Unmarshal([]byte(cur.Args), &words); err == nil {
				cur.Exec = words
			}
		}
		out = append(out, *cur)
		cur, parts = nil, nil
	}
	for i, raw := range lines {
		n := i + 1
		line := strings.TrimSpace(raw)
		if directives {
			if m := directive.FindStringSubmatch(line); m != nil {
				if strings.EqualFold(m[1], "escape") && m[2] != `\` {
					probs = append(probs, Problem{n, "escape directive " + m[2] + ": only the default backslash is supported here"})
				}
				continue
			}
			directives = false
		}
		if strings.HasPrefix(line, "#") {
			continue // a comment, also inside a continued instruction
		}
		if cur == nil {
			if line == "" {
				continue
			}
			word, rest, _ := strings.Cut(line, " ")
			if tab := strings.IndexByte(word, '\t'); tab >= 0 {
				word, rest = word[:tab], word[tab+1:]+" "+rest
			}
			cmd := strings.ToUpper(word)
			if !known[cmd] {
				probs = append(probs, Problem{n, "unknown instruction " + word})
			}
			cur = &Instruction{Line: n, Cmd: cmd}
			line = strings.TrimSpace(rest)
			if strings.Contains(line, "<<") && (cmd == "RUN" || cmd == "COPY") {
				probs = append(probs, Problem{n, "heredocs are not supported by this linter"})
			}
		} else if line == "" {
			continue // an empty line inside a continuation is allowed
		}
		if strings.HasSuffix(line, `\`) {
			parts = append(parts, strings.TrimSuffix(line, `\`))
			continue
		}
		parts = append(parts, line)
		finish()
	}
	if cur != nil {
		probs = append(probs, Problem{cur.Line, "the file ends inside a continued instruction"})
		finish()
	}
	return out, probs
}

// Rules configures Lint.
type Rules struct {
	ReleaseScript string // a RUN must call it
}

var (
	aptInstall = regexp.MustCompile(`\bapt-get\s+(?:-\S+\s+)*install\b`)
	aptUpgrade = regexp.MustCompile(`\bapt-get\s+(?:-\S+\s+)*(?:dist-)?upgrade\b`)
	aptYes     = regexp.MustCompile(`(?:^|\s)(?:-y|--yes|--assume-yes|-[a-z]*y[a-z]*)(?:\s|$)`)
	goBuild    = regexp.MustCompile(`\bgo\s+build\b`)
)

// Lint parses src and applies the rules in the package comment.
func Lint(src string, r Rules) []Problem {
	ins, probs := Parse(src)
	add := func(line int, format string, args ...any) {
		probs = append(probs, Problem{line, fmt.Sprintf(format, args...)})
	}
	if len(ins) == 0 {
		add(1, "no instructions")
		return probs
	}
	seenFrom, callsScript, hasCmd := false, false, false
	stages := map[string]bool{} // names given with FROM ... AS name
	for _, in := range ins {
		if !seenFrom && in.Cmd != "FROM" && in.Cmd != "ARG" {
			add(in.Line, "%s before the first FROM", in.Cmd)
		}
		switch in.Cmd {
		case "FROM":
			seenFrom = true
			checkFrom(in, stages, add)
		case "RUN":
			// Each command of a && / ; / | chain on its own.
			for _, c := range commands(in) {
				if aptUpgrade.MatchString(c) {
					add(in.Line, "apt-get upgrade: leave the base image's packages as they are (pin a newer base image instead)")
				}
				if aptInstall.MatchString(c) {
					if !strings.Contains(c, "--no-install-recommends") {
						add(in.Line, "apt-get install without --no-install-recommends")
					}
					if !aptYes.MatchString(c) {
						add(in.Line, "apt-get install without -y")
					}
				}
				if goBuild.MatchString(c) {
					add(in.Line, "go build in the Dockerfile: build with %s, which holds the flags", r.ReleaseScript)
				}
				if r.ReleaseScript != "" && callsWord(c, r.ReleaseScript) {
					callsScript = true
				}
			}
		case "CMD", "ENTRYPOINT":
			hasCmd = true
		}
	}
	if r.ReleaseScript != "" && !callsScript {
		add(ins[len(ins)-1].Line, "no RUN calls %s: the release binary must be built as make release builds it", r.ReleaseScript)
	}
	if !hasCmd {
		add(ins[len(ins)-1].Line, "no CMD or ENTRYPOINT: the image should run the tests")
	}
	return probs
}

// checkFrom wants "FROM [--platform=P] IMAGE[:TAG|@DIGEST] [AS NAME]" with
// a tag other than latest, or a digest. An image named by an ARG cannot be
// checked here and is refused. "scratch" and earlier stages need no tag.
// It records the stage's name in stages.
func checkFrom(in Instruction, stages map[string]bool, add func(int, string, ...any)) {
	words := strings.Fields(in.Args)
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		words = words[1:]
	}
	if len(words) == 0 {
		add(in.Line, "FROM without an image")
		return
	}
	if len(words) == 3 && strings.EqualFold(words[1], "AS") {
		defer func() { stages[strings.ToLower(words[2])] = true }()
	} else if len(words) != 1 {
		add(in.Line, "FROM %s: want IMAGE [AS NAME]", in.Args)
	}
	image := words[0]
	if strings.Contains(image, "$") {
		add(in.Line, "FROM %s: an image from a variable cannot be checked; name it", image)
		return
	}
	if image == "scratch" {
		return
	}
	if _, digest, ok := strings.Cut(image, "@"); ok {
		if !strings.HasPrefix(digest, "sha256:") {
			add(in.Line, "FROM %s: malformed digest", image)
		}
		return
	}
	// The tag follows the last colon after the last slash (a registry
	// host may carry a port: registry:5000/img:tag).
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, ok := strings.Cut(name, ":")
	switch {
	case !ok && stages[strings.ToLower(image)]:
		// A stage of this Dockerfile.
	case !ok:
		add(in.Line, "FROM %s: no tag (that means latest); name a version", image)
	case tag == "latest":
		add(in.Line, "FROM %s: the latest tag changes under the build; name a version", image)
	}
}

// commands splits a RUN into its shell commands (at &&, ||, ;, | and
// newlines); the exec form is one command.
func commands(in Instruction) []string {
	if in.Exec != nil {
		return []string{strings.Join(in.Exec, " ")}
	}
	s := strings.NewReplacer("&&", "\x00", "||", "\x00", ";", "\x00", "|", "\x00").Replace(in.Args)
	var out []string
	for _, c := range strings.Split(s, "\x00") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// callsWord reports whether the command runs path: a word of it is path,
// ./path, or ends in /path.
func callsWord(c, path string) bool {
	for _, w := range strings.Fields(c) {
		w = strings.Trim(w, `"'`)
		if w == path || w == "./"+path || strings.HasSuffix(w, "/"+path) {
			return true
		}
	}
	return false
}
