package policy

import "strings"

// shSeg is one part of a shell word: literal text (quoted or not), or an
// expansion whose value is not known here.
type shSeg struct {
	text   string
	quoted bool   // literal text that was quoted or escaped: no pattern, no "~"
	expand bool   // $NAME, ${...}, $(...), `...`, $((...))
	name   string // the variable of $NAME or ${NAME}
	known  bool   // a directory put in for "~", $HOME or the top: a path, whatever it holds
}

// shToken is an operator or a word.
type shToken struct {
	op   string
	segs []shSeg
}

// literal returns the word's text when it has no expansion.
func (t shToken) literal() (string, bool) {
	var b strings.Builder
	for _, s := range t.segs {
		if s.expand {
			return "", false
		}
		b.WriteString(s.text)
	}
	return b.String(), true
}

// plainLiteral returns the word's text when it is one unquoted literal.
func (t shToken) plainLiteral() string {
	if len(t.segs) == 1 && !t.segs[0].quoted && !t.segs[0].expand {
		return t.segs[0].text
	}
	return ""
}

// shOperators, longest first where one is a prefix of another.
var shOperators = []string{"&&", "||", ";;", "|&", "<<-", "<<", "<>", "<&", ">>", ">&", ">|", ";", "&", "|", "(", ")", "<", ">"}

// shLex splits shell text into operators and words (POSIX sh's token
// rules: quoting, backslashes, comments, expansions), and returns the
// texts of the command substitutions it met, which are shell text too.
func shLex(s string) (tokens []shToken, nested []string) {
	l := &shLexer{s: s}
	for l.i < len(s) {
		c := s[l.i]
		switch {
		case c == ' ' || c == '\t':
			l.i++
		case c == '\n':
			tokens = append(tokens, shToken{op: ";"})
			l.i++
		case c == '#':
			for l.i < len(s) && s[l.i] != '\n' {
				l.i++
			}
		case strings.IndexByte(";&|()<>", c) >= 0:
			for _, op := range shOperators {
				if strings.HasPrefix(s[l.i:], op) {
					tokens = append(tokens, shToken{op: op})
					l.i += len(op)
					break
				}
			}
		default:
			w := l.word()
			if lit, ok := w.literal(); ok && l.i < len(s) && (s[l.i] == '<' || s[l.i] == '>') && strings.Trim(lit, "0123456789") == "" {
				continue // an IO number ("2>file")
			}
			tokens = append(tokens, w)
		}
	}
	return tokens, l.nested
}

type shLexer struct {
	s      string
	i      int
	nested []string
}

// word reads one word.
func (l *shLexer) word() shToken {
	var t shToken
	lit := func(text string, quoted bool) {
		if n := len(t.segs); n > 0 && !t.segs[n-1].expand && t.segs[n-1].quoted == quoted {
			t.segs[n-1].text += text
			return
		}
		t.segs = append(t.segs, shSeg{text: text, quoted: quoted})
	}
	s := l.s
	for l.i < len(s) {
		c := s[l.i]
		if c == ' ' || c == '\t' || c == '\n' || strings.IndexByte(";&|()<>", c) >= 0 {
			break
		}
		switch c {
		case '\\':
			if l.i+1 < len(s) {
				if s[l.i+1] != '\n' {
					lit(s[l.i+1:l.i+2], true)
				}
				l.i += 2
			} else {
				lit("\\", true)
				l.i++
			}
		case '\'':
			end := strings.IndexByte(s[l.i+1:], '\'')
			if end < 0 {
				end = len(s) - l.i - 1
			}
			lit(s[l.i+1:l.i+1+end], true)
			l.i += end + 2
		case '"':
			l.i++
			for l.i < len(s) && s[l.i] != '"' {
				switch d := s[l.i]; {
				case d == '\\' && l.i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[l.i+1]) >= 0:
					if s[l.i+1] != '\n' {
						lit(s[l.i+1:l.i+2], true)
					}
					l.i += 2
				case d == '$' || d == '`':
					t.segs = append(t.segs, l.expansion())
				default:
					lit(s[l.i:l.i+1], true)
					l.i++
				}
			}
			l.i++
		case '$', '`':
			t.segs = append(t.segs, l.expansion())
		default:
			lit(s[l.i:l.i+1], false)
			l.i++
		}
	}
	if l.i > len(s) {
		l.i = len(s)
	}
	return t
}

// expansion reads an expansion at "$" or "`"; a "$" that starts none is
// a literal dollar sign.
func (l *shLexer) expansion() shSeg {
	s := l.s
	if s[l.i] == '`' {
		end := l.i + 1
		for end < len(s) && s[end] != '`' {
			if s[end] == '\\' {
				end++
			}
			end++
		}
		inner := s[l.i+1 : min(end, len(s))]
		l.i = end + 1
		if seg, ok := topOfWorkTree(inner); ok {
			return seg
		}
		l.nested = append(l.nested, inner)
		return shSeg{expand: true, text: "`" + inner + "`"}
	}
	start := l.i
	l.i++
	if l.i >= len(s) {
		return shSeg{text: "$"}
	}
	switch c := s[l.i]; {
	case c == '(':
		arith := strings.HasPrefix(s[l.i:], "((")
		end := matchParen(s, l.i)
		inner := s[l.i+1 : min(end, len(s))]
		l.i = end + 1
		if seg, ok := topOfWorkTree(inner); ok {
			return seg
		}
		if !arith {
			l.nested = append(l.nested, inner)
		}
	case c == '{':
		end := strings.IndexByte(s[l.i:], '}')
		if end < 0 {
			end = len(s) - l.i
		}
		inner := s[l.i+1 : l.i+end]
		l.i += end + 1
		seg := shSeg{expand: true, text: s[start:min(l.i, len(s))]}
		if shName(inner) {
			seg.name = inner
		}
		return seg
	case shNameStart(c):
		end := l.i
		for end < len(s) && (shNameStart(s[end]) || s[end] >= '0' && s[end] <= '9') {
			end++
		}
		name := s[l.i:end]
		l.i = end
		return shSeg{expand: true, text: "$" + name, name: name}
	case c >= '0' && c <= '9' || strings.IndexByte("@*#?-$!", c) >= 0:
		l.i++
	default:
		return shSeg{text: "$"}
	}
	return shSeg{expand: true, text: s[start:min(l.i, len(s))]}
}

// topOfWorkTree is the command substitution "$(git rev-parse
// --show-toplevel)", the common way to name a script in the work tree: its
// top, where git runs the value (the key's base, "."), or false for
// another command.
func topOfWorkTree(cmd string) (shSeg, bool) {
	if strings.Join(strings.Fields(cmd), " ") != "git rev-parse --show-toplevel" {
		return shSeg{}, false
	}
	return shSeg{text: ".", quoted: true, known: true}, true
}

// matchParen returns the index of the ")" closing the "(" at open, skipping
// quoted text; len(s) when there is none.
func matchParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return len(s)
			}
			i += end + 1
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return len(s)
}

func shNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func shName(s string) bool {
	if s == "" || !shNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !shNameStart(s[i]) && !(s[i] >= '0' && s[i] <= '9') {
			return false
		}
	}
	return true
}
