// Command gen-manpage writes the sandbox-executable(1) man page from the
// --help text, so that the two cannot drift apart.
//
// It cannot import package main of cmd/sandbox-executable, so it reads the
// `usage` string constant out of cmd/sandbox-executable/usage.go with
// go/parser, splits the text into its parts (synopsis, description, option
// groups, exit status) and renders them as man(7) roff. The sections the
// --help text has no room for (NAME's one-line summary, FILES, SEE ALSO)
// are fixed text here.
//
//	go run ./cmd/gen-manpage [-src cmd/sandbox-executable/usage.go] [-o packaging/sandbox-executable.1] [-check]
//
// With -check it writes nothing and exits 1 when the file at -o differs
// from what it would write (a stale page).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

func main() {
	src := flag.String("src", "cmd/sandbox-executable/usage.go", "the Go file holding the usage constant")
	out := flag.String("o", "packaging/sandbox-executable.1", "the man page to write (- for stdout)")
	check := flag.Bool("check", false, "only check that -o is up to date; exit 1 if not")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "gen-manpage: unexpected arguments:", flag.Args())
		os.Exit(2)
	}
	if err := run(*src, *out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gen-manpage:", err)
		os.Exit(1)
	}
}

func run(src, out string, check bool) error {
	page, err := generate(src)
	if err != nil {
		return err
	}
	switch {
	case check:
		have, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		if !bytes.Equal(have, page) {
			return fmt.Errorf("%s is stale: regenerate it with `make manpage`", out)
		}
		return nil
	case out == "-":
		_, err := os.Stdout.Write(page)
		return err
	default:
		return os.WriteFile(out, page, 0o644)
	}
}

// generate reads the usage constant from src and returns the man page.
func generate(src string) ([]byte, error) {
	text, err := usageFromFile(src)
	if err != nil {
		return nil, err
	}
	h, err := parseHelp(text)
	if err != nil {
		return nil, fmt.Errorf("%s: usage: %w", src, err)
	}
	return render(h), nil
}
