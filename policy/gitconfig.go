package policy

import (
	"errors"
	"strconv"
	"strings"
)

// gitConfigEntry is one variable of a git configuration file.
type gitConfigEntry struct {
	// Section is the section name lower-cased ("core", "include"), then,
	// for [section "sub"], a dot and the subsection as written
	// (case-sensitive); for the old [section.sub] form the whole name is
	// lower-cased, as git does.
	Section string
	// Key is the variable's name, lower-cased ("hookspath").
	Key string
	// Value is the value, unquoted and unescaped; HasValue is false for a
	// bare "key" line (git's boolean true, no value).
	Value    string
	HasValue bool
}

// parseGitConfig parses the text of a git configuration file the way git's
// config.c (git_parse_source) does, character by character: a UTF-8 byte
// order mark at the start, "#" and ";" comments, [section], [section
// "subsection"] and [section.subsection] headers (several may share a line
// with variables), "key", "key = value", quoted parts, the escapes \\ \"
// \n \t \b and backslash-newline, CRLF line ends. A value ends at the first
// NUL, as it does for git's C strings. What git rejects is an error naming
// the line: git refuses to run with such a file, so it cannot be guessed
// at. The entries before the error are returned with it.
func parseGitConfig(text string) ([]gitConfigEntry, error) {
	p := &gitConfigParser{text: text, line: 1}
	var out []gitConfigEntry
	section := ""
	comment := false
	bom := "\xef\xbb\xbf"
	for first := true; ; first = false {
		c := p.next()
		if first && !p.eof && strings.HasPrefix(text, bom) {
			p.pos = len(bom)
			c = p.next()
		}
		if c == '\n' {
			if p.eof {
				return out, nil
			}
			comment = false
			continue
		}
		if comment || gitSpace(c) {
			continue
		}
		if c == '#' || c == ';' {
			comment = true
			continue
		}
		if c == '[' {
			s, ok := p.sectionHeader()
			if !ok || s == "" {
				return out, p.err()
			}
			section = s
			continue
		}
		if !gitAlpha(c) {
			return out, p.err()
		}
		e, ok := p.variable(c)
		if !ok {
			return out, p.err()
		}
		e.Section = section
		out = append(out, e)
	}
}

// gitConfigParser holds the position in one file's text.
type gitConfigParser struct {
	text string
	pos  int
	line int
	eof  bool
}

// next returns the next character as git's get_next_char does: "\r\n" is
// "\n", and the end of the text is a "\n" with eof set.
func (p *gitConfigParser) next() byte {
	if p.pos >= len(p.text) {
		p.eof = true
		return '\n'
	}
	c := p.text[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.text) && p.text[p.pos] == '\n' {
		c = '\n'
		p.pos++
	}
	if c == '\n' {
		p.line++
	}
	return c
}

func (p *gitConfigParser) err() error {
	line := p.line
	if !p.eof && p.pos > 0 && p.text[p.pos-1] == '\n' {
		// The line that ended the bad construct.
		line--
	}
	if line < 1 {
		line = 1
	}
	return errors.New("line " + strconv.Itoa(line) + " is not valid git configuration")
}

// sectionHeader reads the rest of "[name]" or "[name "sub"]" after "[".
func (p *gitConfigParser) sectionHeader() (string, bool) {
	var name strings.Builder
	for {
		c := p.next()
		if p.eof {
			return "", false
		}
		if c == ']' {
			return name.String(), true
		}
		if gitSpace(c) {
			return p.extendedHeader(name.String(), c)
		}
		if !gitKeyChar(c) && c != '.' {
			return "", false
		}
		name.WriteByte(lower(c))
	}
}

// extendedHeader reads ` "sub"]` after the name of [name "sub"].
func (p *gitConfigParser) extendedHeader(base string, c byte) (string, bool) {
	for gitSpace(c) {
		if c == '\n' {
			return "", false
		}
		c = p.next()
	}
	if c != '"' {
		return "", false
	}
	var sub strings.Builder
	for {
		c := p.next()
		if c == '\n' {
			return "", false
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = p.next(); c == '\n' {
				return "", false
			}
		}
		sub.WriteByte(c)
	}
	if p.next() != ']' {
		return "", false
	}
	return base + "." + sub.String(), true
}

// variable reads a variable whose name starts with c.
func (p *gitConfigParser) variable(c byte) (gitConfigEntry, bool) {
	var name strings.Builder
	name.WriteByte(lower(c))
	for {
		c = p.next()
		if p.eof || !gitKeyChar(c) {
			break
		}
		name.WriteByte(lower(c))
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	e := gitConfigEntry{Key: name.String()}
	if c == '\n' {
		return e, true
	}
	if c != '=' {
		return e, false
	}
	v, ok := p.value()
	if !ok {
		return e, false
	}
	if i := strings.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	e.Value, e.HasValue = v, true
	return e, true
}

// value reads a value after "=" (git's parse_value).
func (p *gitConfigParser) value() (string, bool) {
	var b strings.Builder
	quote, comment, space := false, false, 0
	for {
		c := p.next()
		if c == '\n' {
			return b.String(), !quote
		}
		if comment {
			continue
		}
		if gitSpace(c) && !quote {
			if b.Len() > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			b.WriteByte(' ')
		}
		if c == '\\' {
			switch c = p.next(); c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		b.WriteByte(c)
	}
}

// git's own character classes (sane_ctype): ASCII only.
func gitSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func gitAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func gitKeyChar(c byte) bool {
	return gitAlpha(c) || c >= '0' && c <= '9' || c == '-'
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
