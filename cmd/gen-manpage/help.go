package main

import (
	"fmt"
	"regexp"
	"strings"
)

// help is the --help text, split into the parts a man page shows.
//
// The text's layout, which parseHelp insists on (an unexpected line is an
// error, so a change to usage.go that the generator would render wrongly
// fails `make manpage` and the staleness test instead of shipping):
//
//	Usage:
//	  SYNOPSIS LINE...
//
//	Description paragraph, flush left.
//
//	Group heading:
//	  --option ARG                description, in a column,
//	                              continued in the same column
//	  subcommand [--flag]         likewise
//
//	Exit status:
//	  indented paragraph
type help struct {
	Synopsis    []string
	Description [][]string // paragraphs of lines
	Groups      []group
	ExitStatus  []string
}

type group struct {
	Title   string
	Options []option
}

type option struct {
	Term string   // "--keep-fd N", "--help, -h", "doctor [--json]"
	Desc []string // lines
}

var (
	// An entry: two spaces, the term (an option, or a subcommand such as
	// "doctor [--json]"), two or more spaces, the description's first line.
	optionLine = regexp.MustCompile(`^  (\S.*?)\s{2,}(\S.*)$`)
	// A description continuation: only deeper indentation.
	continuation = regexp.MustCompile(`^\s{4,}(\S.*)$`)
	// A group heading: flush left, ends with a colon.
	heading = regexp.MustCompile(`^(\S.*):$`)
)

func parseHelp(text string) (*help, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	h := &help{}
	i := 0
	errAt := func(format string, args ...any) error {
		return fmt.Errorf("line %d: %s", i+1, fmt.Sprintf(format, args...))
	}

	if len(lines) == 0 || lines[0] != "Usage:" {
		return nil, errAt(`want "Usage:" first`)
	}
	for i = 1; i < len(lines) && strings.HasPrefix(lines[i], "  "); i++ {
		h.Synopsis = append(h.Synopsis, strings.TrimSpace(lines[i]))
	}
	if len(h.Synopsis) == 0 {
		return nil, errAt("no synopsis line under Usage:")
	}

	// Blocks separated by blank lines: a flush-left paragraph, or a heading
	// with indented lines under it.
	for i < len(lines) {
		if lines[i] == "" {
			i++
			continue
		}
		m := heading.FindStringSubmatch(lines[i])
		if m == nil || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], " ") {
			if strings.HasPrefix(lines[i], " ") {
				return nil, errAt("indented line outside a group: %q", lines[i])
			}
			if len(h.Groups) > 0 || h.ExitStatus != nil {
				return nil, errAt("description paragraph after the options: %q", lines[i])
			}
			var para []string
			for ; i < len(lines) && lines[i] != ""; i++ {
				if strings.HasPrefix(lines[i], " ") {
					return nil, errAt("indented line inside a paragraph: %q", lines[i])
				}
				para = append(para, lines[i])
			}
			h.Description = append(h.Description, para)
			continue
		}
		title := m[1]
		i++
		if strings.EqualFold(title, "Exit status") {
			for ; i < len(lines) && lines[i] != ""; i++ {
				h.ExitStatus = append(h.ExitStatus, strings.TrimSpace(lines[i]))
			}
			continue
		}
		g := group{Title: title}
		for ; i < len(lines) && lines[i] != ""; i++ {
			if m := optionLine.FindStringSubmatch(lines[i]); m != nil {
				g.Options = append(g.Options, option{Term: m[1], Desc: []string{m[2]}})
				continue
			}
			if m := continuation.FindStringSubmatch(lines[i]); m != nil && len(g.Options) > 0 {
				o := &g.Options[len(g.Options)-1]
				o.Desc = append(o.Desc, m[1])
				continue
			}
			return nil, errAt("in %q: neither an option nor a continuation: %q", title, lines[i])
		}
		h.Groups = append(h.Groups, g)
	}
	if len(h.Description) == 0 {
		return nil, fmt.Errorf("no description paragraph")
	}
	if len(h.Groups) == 0 {
		return nil, fmt.Errorf("no option group")
	}
	if h.ExitStatus == nil {
		return nil, fmt.Errorf(`no "Exit status:" block`)
	}
	return h, nil
}
