package policy

import (
	"strings"
	"testing"
)

func TestEscapeText(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{tick("plain_name"), "`plain_name`"},
		{tick("a`b\\c"), "`a\\`b\\\\c`"},
		{tick("line\nbreak\r\t"), "`line\\nbreak\\r\\t`"},
		{tick("\x00\x1b[31m"), "`\\x00\\x1b[31m`"},
		{tick("\xff\xfe"), "`\\xff\\xfe`"},
		{tick("déjà 😀"), "`déjà 😀`"},
		{tick("rtl\u202eoverride\u200b"), "`rtl\\u202eoverride\\u200b`"},
		{tick(strings.Repeat("x", 70)), "`" + strings.Repeat("x", 64) + "...`"},
		{tick(strings.Repeat("é", 64)), "`" + strings.Repeat("é", 64) + "`"},
		{quote(`say "hi"\`), `"say \"hi\"\\"`},
		{quote("/a\x00b"), `"/a\x00b"`},
		{plain(`/a\b` + "\n"), `/a\b\n`},
		{plain(strings.Repeat("/d", 200)), strings.Repeat("/d", 128) + "..."},
	} {
		if tt.got != tt.want {
			t.Errorf("got %s, want %s", tt.got, tt.want)
		}
	}
}

func TestJSONPath(t *testing.T) {
	var root *jsonPath
	for _, tt := range []struct{ got, want string }{
		{root.String(), ""},
		{root.field("writable_roots").elem(1).field("root").String(), "writable_roots[1].root"},
		{root.field("resource_limits").field("max_memory_mb").String(), "resource_limits.max_memory_mb"},
		{root.elem(0).elem(2).String(), "[0][2]"},
		{root.field("a\nb").String(), `a\nb`},
		{joinPath("seccomp_profile", "blocked_syscalls[3]"), "seccomp_profile.blocked_syscalls[3]"},
		{joinPath("", "max_pids"), "max_pids"},
		{joinPath("x", "[2]"), "x[2]"},
		{joinPath("x", ""), "x"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
