package policy

import "strings"

// Error is a decoding or validation error. It names the command-line argument
// the bad value came from and the path of the value inside that argument's
// JSON, so that one line tells a user what to fix:
//
//	--sandbox-policy: writable_roots[1].root: expected a string, got a number
type Error struct {
	// Source is the input the bad value came from (unset from the
	// decoders, which do not know).
	Source Source
	// Arg is how the caller names that input (the CLI: its flag,
	// "--sandbox-policy"; Input.Names); the decoders leave it empty and the
	// caller fills it in with WithArg.
	Arg string
	// Path is the JSON path in serde's dotted form ("writable_roots[1].root");
	// empty when the error concerns the document as a whole.
	Path string
	// Msg says what was wrong.
	Msg string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Arg != "" {
		b.WriteString(e.Arg)
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// WithArg returns err with Arg set to arg when err is an *Error without one;
// other errors are returned unchanged.
func WithArg(err error, arg string) error {
	if pe, ok := err.(*Error); ok && pe.Arg == "" {
		c := *pe
		c.Arg = arg
		return &c
	}
	return err
}
