package policy

import (
	"strconv"
	"strings"
)

// describe names the JSON type of n for a "got ..." message.
func describe(n *node) string {
	switch n.kind {
	case nodeNull:
		return "null"
	case nodeBool:
		return "a boolean"
	case nodeNumber:
		if isFloatLiteral(n.text) {
			return "a floating-point number " + escapeText(n.text, 0, maxNameEcho)
		}
		return "a number"
	case nodeString:
		return "a string"
	case nodeArray:
		return "an array"
	default:
		return "an object"
	}
}

// typeError reports that the value at path is not of the wanted type.
func typeError(path *jsonPath, want string, got *node) *Error {
	return &Error{Path: path.String(), Msg: "expected " + want + ", got " + describe(got)}
}

// isFloatLiteral reports whether a JSON number literal has a fraction or an
// exponent, which serde_json parses as f64 (so "120.0" and "1e3" are floats).
func isFloatLiteral(lit string) bool {
	return strings.ContainsAny(lit, ".eE")
}

// decodeBool accepts only true and false.
func decodeBool(n *node, path *jsonPath) (bool, error) {
	if n.kind != nodeBool {
		return false, typeError(path, "a boolean", n)
	}
	return n.boolean, nil
}

// decodeString accepts only a JSON string (which may contain "\u0000").
func decodeString(n *node, path *jsonPath) (string, error) {
	if n.kind != nodeString {
		return "", typeError(path, "a string", n)
	}
	return n.text, nil
}

// uintNames describes the unsigned integer types serde decodes.
var uintNames = map[int]string{
	16: "an unsigned 16-bit integer",
	32: "an unsigned 32-bit integer",
	64: "an unsigned 64-bit integer",
}

// decodeUint accepts a JSON integer literal in the range of an unsigned
// integer of the given size. Like serde it rejects floats (even "120.0"),
// negative numbers (even "-0") and values out of range.
func decodeUint(n *node, path *jsonPath, bits int) (uint64, error) {
	want := uintNames[bits]
	if n.kind != nodeNumber || isFloatLiteral(n.text) {
		return 0, typeError(path, want, n)
	}
	v, err := strconv.ParseUint(n.text, 10, bits)
	if err != nil {
		return 0, &Error{Path: path.String(), Msg: "invalid value: " + escapeText(n.text, 0, maxNameEcho) + ", expected " + want}
	}
	return v, nil
}

// decodeArray checks that n is an array and calls elem for each element.
func decodeArray(n *node, path *jsonPath, elem func(*node, *jsonPath) error) error {
	if n.kind != nodeArray {
		return typeError(path, "an array", n)
	}
	for i, e := range n.elems {
		if err := elem(e, path.elem(i)); err != nil {
			return err
		}
	}
	return nil
}
