package policy

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on how much user-supplied text an error message echoes.
const (
	maxNameEcho = 64  // field names, variant names, number literals
	maxPathEcho = 256 // filesystem paths and other strings
)

// tick renders user text as `text` for an error message: one line,
// control and format characters escaped, at most maxNameEcho characters.
func tick(s string) string {
	return "`" + escapeText(s, '`', maxNameEcho) + "`"
}

// quote renders user text as "text" for an error message, like tick but
// with double quotes and a longer cap (it is used for paths).
func quote(s string) string {
	return `"` + escapeText(s, '"', maxPathEcho) + `"`
}

// plain renders user text without quotes (for paths that start with "/"),
// escaped and capped like quote.
func plain(s string) string {
	return escapeText(s, 0, maxPathEcho)
}

// escapeText escapes s so that it is safe to print on one terminal line:
// printable characters are kept, the rest become Go escapes (\n, \x00,
// \u202e, ...) and invalid UTF-8 bytes become \xNN. With a delim (the quote
// around the text) the delim and the backslash are escaped too, so that the
// quoted text reads unambiguously. After max characters the rest is
// replaced by "...".
func escapeText(s string, delim rune, max int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		if n == max {
			b.WriteString("...")
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case delim != 0 && (r == '\\' || r == delim):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < utf8.RuneSelf && r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r >= utf8.RuneSelf && unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r) // 'x' with escapes
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
		n++
	}
	return b.String()
}
