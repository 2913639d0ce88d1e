package policy

import "strings"

// Beneath reports whether the clean absolute path p lies strictly beneath
// the clean absolute directory dir ("/a/b" is beneath "/a" and "/", "/ab"
// is not beneath "/a").
func Beneath(p, dir string) bool {
	if dir == "/" {
		return p != "/" && strings.HasPrefix(p, "/")
	}
	return len(p) > len(dir) && strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}

// Within reports whether p is dir or lies beneath it.
func Within(p, dir string) bool { return p == dir || Beneath(p, dir) }
