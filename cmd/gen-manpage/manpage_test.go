package main

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

const (
	realUsage = "../sandbox-executable/usage.go"
	committed = "../../packaging/sandbox-executable.1"
)

// TestCommittedPageIsCurrent fails when usage.go changed and the committed
// man page was not regenerated.
func TestCommittedPageIsCurrent(t *testing.T) {
	want, err := generate(realUsage)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("packaging/sandbox-executable.1 is stale: run `make manpage` (go run ./cmd/gen-manpage) and commit it")
	}
}

// TestEveryEntryIsOnThePage guards against the parser dropping lines: every
// term and every description line of the real --help text is on the page.
func TestEveryEntryIsOnThePage(t *testing.T) {
	text, err := usageFromFile(realUsage)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHelp(text)
	if err != nil {
		t.Fatal(err)
	}
	page := string(render(h))
	n := 0
	for _, g := range h.Groups {
		for _, o := range g.Options {
			n++
			if !strings.Contains(page, ".TP\n"+termLine(o.Term)+"\n") {
				t.Errorf("term %q missing", o.Term)
			}
			for _, l := range o.Desc {
				if !strings.Contains(page, textLine(l)+"\n") {
					t.Errorf("line %q of %q missing", l, o.Term)
				}
			}
		}
	}
	// Each entry of the --help text starts a line with two spaces and then
	// a non-space; count them independently of the parser.
	entries := 0
	inGroups := false
	for _, l := range strings.Split(text, "\n") {
		if l == "Exit status:" {
			break
		}
		if strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ") && l != "Usage:" {
			inGroups = true
		}
		if inGroups && strings.HasPrefix(l, "  ") && l[2] != ' ' {
			entries++
		}
	}
	if n != entries || n == 0 {
		t.Errorf("rendered %d entries, the text has %d", n, entries)
	}
}

const sample = `Usage:
  prog [OPTIONS] --must JSON [--] PROGRAM [ARGS...]
  prog sub [--json]

First paragraph,
two lines.

.Second paragraph starts with a dot, has "--x" and a\b.

Group one:
  --must JSON                 first line
                              second line
  --flag, -f                  short
  sub [--json]                a subcommand

Group two:
  --n N                       a number

Exit status:
  zero, or
  not.
`

func TestParseHelp(t *testing.T) {
	h, err := parseHelp(sample)
	if err != nil {
		t.Fatal(err)
	}
	want := &help{
		Synopsis: []string{"prog [OPTIONS] --must JSON [--] PROGRAM [ARGS...]", "prog sub [--json]"},
		Description: [][]string{
			{"First paragraph,", "two lines."},
			{`.Second paragraph starts with a dot, has "--x" and a\b.`},
		},
		Groups: []group{
			{Title: "Group one", Options: []option{
				{Term: "--must JSON", Desc: []string{"first line", "second line"}},
				{Term: "--flag, -f", Desc: []string{"short"}},
				{Term: "sub [--json]", Desc: []string{"a subcommand"}},
			}},
			{Title: "Group two", Options: []option{{Term: "--n N", Desc: []string{"a number"}}}},
		},
		ExitStatus: []string{"zero, or", "not."},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %+v\nwant %+v", h, want)
	}
}

func TestParseHelpRejects(t *testing.T) {
	for name, text := range map[string]string{
		"no usage":         "Hello\n",
		"no synopsis":      "Usage:\n\nText.\n",
		"stray indent":     "Usage:\n  p\n\nText.\n   indented\n",
		"bad entry":        "Usage:\n  p\n\nText.\n\nG:\n  --a   x\n  oops\n\nExit status:\n  0\n",
		"text after opts":  "Usage:\n  p\n\nText.\n\nG:\n  --a   x\n\nMore text.\n\nExit status:\n  0\n",
		"no groups":        "Usage:\n  p\n\nText.\n\nExit status:\n  0\n",
		"no exit status":   "Usage:\n  p\n\nText.\n\nG:\n  --a   x\n",
		"no description":   "Usage:\n  p\n\nG:\n  --a   x\n\nExit status:\n  0\n",
		"continuation 1st": "Usage:\n  p\n\nText.\n\nG:\n                x\n\nExit status:\n  0\n",
	} {
		if _, err := parseHelp(text); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestRoffEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`"--opt=VALUE" or --x`: `"\-\-opt=VALUE" or \-\-x`,
		"read-only wall-clock": "read-only wall-clock",
		`a\b`:                  `a\eb`,
		"(--json)":             `(\-\-json)`,
	} {
		if got := escapeText(in); got != want {
			t.Errorf("escapeText(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		".starts with a dot": `\&.starts with a dot`,
		"'starts with quote": `\&'starts with quote`,
		"plain":              "plain",
	} {
		if got := textLine(in); got != want {
			t.Errorf("textLine(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"--keep-fd N":        `\fB\-\-keep\-fd\fR \fIN\fR`,
		"--help, -h":         `\fB\-\-help\fR, \fB\-h\fR`,
		"doctor [--json]":    `\fBdoctor\fR [\fB\-\-json\fR]`,
		"[--] PROGRAM":       `[\fB\-\-\fR] \fIPROGRAM\fR`,
		"[ARGS...]":          `[\fIARGS\fR...]`,
		"sandbox-executable": `\fBsandbox\-executable\fR`,
	} {
		if got := termLine(in); got != want {
			t.Errorf("termLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUsageFromFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.go", "package main\n\nconst other = \"x\"\n\nconst (\n\ta = 1\n\tusage = `Usage:\n  p\n`\n)\n")
	if got, err := usageFromFile(good); err != nil || got != "Usage:\n  p\n" {
		t.Errorf("good: %q, %v", got, err)
	}
	quoted := write("quoted.go", "package main\nconst usage = \"Usage:\\n  p\\n\"\n")
	if got, err := usageFromFile(quoted); err != nil || got != "Usage:\n  p\n" {
		t.Errorf("quoted: %q, %v", got, err)
	}
	for name, src := range map[string]string{
		"concat.go":  "package main\nconst usage = \"a\" + \"b\"\n",
		"missing.go": "package main\nconst use = \"a\"\n",
		"var.go":     "package main\nvar usage = \"a\"\n",
		"broken.go":  "package main\nconst usage = \n",
	} {
		if _, err := usageFromFile(write(name, src)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRunCheck(t *testing.T) {
	out := filepath.Join(t.TempDir(), "page.1")
	if err := run(realUsage, out, false); err != nil {
		t.Fatal(err)
	}
	if err := run(realUsage, out, true); err != nil {
		t.Errorf("fresh page: %v", err)
	}
	if err := os.WriteFile(out, []byte(".TH OLD 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(realUsage, out, true); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("stale page: %v", err)
	}
}

// TestGroffWarnsNothing formats the page with every groff warning on, when
// groff is installed.
func TestGroffWarnsNothing(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		testcap.Skipf(t, testcap.Installed, "groff not installed")
	}
	page, err := generate(realUsage)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = bytes.NewReader(page)
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Fatalf("groff: %v\n%s", err, out)
	}
}

// TestCompletionOffersEveryOption keeps the hand-written completions (bash,
// zsh, fish) in step with --help: every option and subcommand word of every
// entry is in each of packaging/completion's files (fish names an option
// without its dashes: "-l rw", "-s q").
func TestCompletionOffersEveryOption(t *testing.T) {
	text, err := usageFromFile(realUsage)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHelp(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"sandbox-executable.bash", "_sandbox-executable", "sandbox-executable.fish"} {
		b, err := os.ReadFile("../../packaging/completion/" + file)
		if err != nil {
			t.Fatal(err)
		}
		words := map[string]bool{}
		for _, w := range strings.FieldsFunc(string(b), func(r rune) bool { return strings.ContainsRune(" \t\n\"'()|=;{}[*:,", r) }) {
			words[w] = true
		}
		fish := strings.HasSuffix(file, ".fish")
		for _, g := range h.Groups {
			for _, o := range g.Options {
				for _, w := range strings.Fields(o.Term) {
					w = strings.Trim(w, "[],")
					if w == "" || isMetavar(strings.TrimSuffix(w, "...")) {
						continue
					}
					have := words[w]
					if fish && strings.HasPrefix(w, "-") {
						have = strings.Contains(string(b), " -l "+strings.TrimPrefix(w, "--")+" ") || strings.Contains(string(b), " -s "+strings.TrimPrefix(w, "-")+" ")
					}
					if !have {
						t.Errorf("%s does not offer %q (from %q)", file, w, o.Term)
					}
				}
			}
		}
	}
}
