package policy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sandbox-executable/internal/testcap"
)

// gitConfigCases are configuration texts with what git makes of them:
// entries as "section.key=value" ("section.key" without a value), or an
// error naming the line.
var gitConfigCases = []struct {
	text string
	want []string
	err  string
}{
	{text: "[core]\n\thooksPath = .githooks\n", want: []string{"core.hookspath=.githooks"}},
	{text: "[Core]\nHooksPath=x", want: []string{"core.hookspath=x"}},
	{text: "[core] hookspath = x", want: []string{"core.hookspath=x"}},
	{text: "[core]\n  hooksPath = \"a b\" # comment", want: []string{"core.hookspath=a b"}},
	{text: "[core]\nhooksPath = a \t b   ", want: []string{"core.hookspath=a   b"}},
	{text: "[core]\nhooksPath = \"x;y\"\nother = x;y", want: []string{"core.hookspath=x;y", "core.other=x"}},
	{text: "[core]\nhooksPath = \"a\\\\b\\\"c\\td\\ne\"", want: []string{"core.hookspath=a\\b\"c\td\ne"}},
	{text: "[core]\nhooksPath = a\\\nb", want: []string{"core.hookspath=ab"}},
	{text: "[core]\r\nhooksPath = x\r\n", want: []string{"core.hookspath=x"}},
	{text: "\xef\xbb\xbf[core]\nhooksPath=x", want: []string{"core.hookspath=x"}},
	{text: "# c\n; d\n[core]\n# hooksPath = no\nbare\nhooksPath =\n", want: []string{"core.bare", "core.hookspath="}},
	{text: "[core \"x\"]\nhooksPath = y\n[core.X]\nhooksPath = z", want: []string{"core.x.hookspath=y", "core.x.hookspath=z"}},
	{text: "[includeIf \"gitdir:~/W/\"]\npath = inc\n[include]\npath = a\n", want: []string{"includeif.gitdir:~/W/.path=inc", "include.path=a"}},
	{text: "[core \"a\\\"b\\\\c\\d\"]\nk = v", want: []string{"core.a\"b\\cd.k=v"}},
	{text: "[a]k=1\n[b]k=2", want: []string{"a.k=1", "b.k=2"}},
	{text: "[core]\nhooksPath = a\"b c\"d  ", want: []string{"core.hookspath=ab cd"}},
	{text: "[core]\nhooksPath = \"  lead\"", want: []string{"core.hookspath=  lead"}},
	{text: "", want: nil},
	{text: "[core\nx=1", err: "line 1 "},
	{text: "[core]\nhooksPath = \"unterminated\n", err: "line 2 "},
	{text: "[core]\n1x = 2", err: "line 2 "},
	{text: "[core]\nkey # c", err: "line 2 "},
	{text: "[core \"x]", err: "line 1 "},
	{text: "[]", err: "line 1 "},
	{text: "[ core ]", err: "line 1 "},
	{text: "[core]\nok = 1\nx = a\\q", err: "line 3 "},
	{text: "[core]\nok = 1\nbad\\ = 1\n", err: "line 3 "},
	{text: "\xef\xbb[core]", err: "line 1 "},
	{text: "[co_re]", err: "line 1 "},
}

func formatEntries(entries []gitConfigEntry) []string {
	var out []string
	for _, e := range entries {
		s := e.Section + "." + e.Key
		if e.HasValue {
			s += "=" + e.Value
		}
		out = append(out, s)
	}
	return out
}

func TestParseGitConfig(t *testing.T) {
	for _, tt := range gitConfigCases {
		entries, err := parseGitConfig(tt.text)
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q...", tt.text, err, tt.err)
			}
			continue
		}
		if got := formatEntries(entries); err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q:\n got %q %v\nwant %q", tt.text, got, err, tt.want)
		}
	}
	// A value ends at a NUL, as a C string does.
	if e, err := parseGitConfig("[core]\nhooksPath = ab\x00cd\n"); err != nil || len(e) != 1 || e[0].Value != "ab" {
		t.Errorf("NUL: %+v %v", e, err)
	}
}

// TestParseGitConfigAgreesWithGit: git itself reads every case the same
// way (git config -f FILE --list -z; no includes are followed there).
func TestParseGitConfigAgreesWithGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		testcap.Skipf(t, testcap.Installed, "no git")
	}
	d := t.TempDir()
	for i, tt := range gitConfigCases {
		f := filepath.Join(d, "config")
		if err := os.WriteFile(f, []byte(tt.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(git, "config", "-f", f, "--list", "-z")
		cmd.Env = []string{"HOME=" + d, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if tt.err != "" {
			want := "bad config " + tt.err
			if err == nil || !strings.Contains(stderr.String(), want) {
				t.Errorf("case %d %q: git said %q %v, want %q", i, tt.text, stderr.String(), err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("case %d %q: git: %v %s", i, tt.text, err, stderr.String())
			continue
		}
		var got []string
		for _, rec := range strings.Split(string(out), "\x00") {
			if rec == "" {
				continue
			}
			name, value, hasValue := strings.Cut(rec, "\n")
			if hasValue {
				name += "=" + value
			}
			got = append(got, name)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("case %d %q: git lists %q, the table %q", i, tt.text, got, tt.want)
		}
	}
}

func FuzzParseGitConfig(f *testing.F) {
	for _, tt := range gitConfigCases {
		f.Add(tt.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		entries, err := parseGitConfig(text)
		if err != nil && (!strings.HasPrefix(err.Error(), "line ") || strings.Contains(err.Error(), "\n")) {
			t.Fatalf("error %q", err)
		}
		for _, e := range entries {
			if e.Key == "" || strings.IndexByte(e.Value, 0) >= 0 {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}
