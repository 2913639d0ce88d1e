package policy

import (
	"strconv"
	"strings"
)

// jsonPath is the location of a value inside a JSON document, kept as a
// chain from the value back to the document root so that building it costs
// nothing until an error needs it. The nil *jsonPath is the root.
type jsonPath struct {
	parent *jsonPath
	name   string // object member name, when index < 0
	index  int    // array index, or -1
}

// field returns the path of member name of the object at p.
func (p *jsonPath) field(name string) *jsonPath {
	return &jsonPath{parent: p, name: name, index: -1}
}

// elem returns the path of element i of the array at p.
func (p *jsonPath) elem(i int) *jsonPath {
	return &jsonPath{parent: p, index: i}
}

// String renders p in serde's dotted form: top-level members bare, nested
// members after a dot, array elements in brackets
// ("writable_roots[1].root"). Member names are escaped for printing.
func (p *jsonPath) String() string {
	if p == nil {
		return ""
	}
	var parts []*jsonPath
	for q := p; q != nil; q = q.parent {
		parts = append(parts, q)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		q := parts[i]
		if q.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(q.index))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(escapeText(q.name, 0, maxNameEcho))
	}
	return b.String()
}

// joinPath appends sub (a dotted path such as "blocked_syscalls[2]") to
// prefix (such as "seccomp_profile"), either of which may be empty.
func joinPath(prefix, sub string) string {
	switch {
	case prefix == "":
		return sub
	case sub == "":
		return prefix
	case strings.HasPrefix(sub, "["):
		return prefix + sub
	default:
		return prefix + "." + sub
	}
}
