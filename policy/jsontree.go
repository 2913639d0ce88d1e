package policy

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// The decoders work in two passes. parseDocument checks the JSON grammar
// (with jsontext: strict RFC 8259, UTF-8 validated, lone surrogates
// rejected) and turns the document into a small tree of nodes, rejecting
// duplicate member names, too deep nesting, a leading byte order mark,
// empty input and trailing characters. The typed decoders (decode.go) then
// walk the tree. Two passes are needed because serde lets the "type" tag of
// a policy come anywhere in the object, after the fields it governs.

// nodeKind is the JSON type of a node.
type nodeKind uint8

const (
	nodeNull nodeKind = iota
	nodeBool
	nodeNumber
	nodeString
	nodeArray
	nodeObject
)

// node is one parsed JSON value.
type node struct {
	kind    nodeKind
	boolean bool
	text    string   // the string value, or the number literal as written
	elems   []*node  // array elements
	members []member // object members, in document order, names unique
}

// member is one name/value pair of an object.
type member struct {
	name  string
	value *node
}

// maxDepth is serde_json's recursion limit: a document nesting this many
// arrays/objects is rejected. No valid argument nests deeper than 4.
const maxDepth = 128

// utf8BOM is the UTF-8 encoding of U+FEFF.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// jsonSpace is the whitespace JSON (and serde_json) allows around values.
const jsonSpace = " \t\r\n"

// parseDocument parses data as exactly one JSON value, optionally followed
// by whitespace.
func parseDocument(data []byte) (*node, error) {
	if len(bytes.Trim(data, jsonSpace)) == 0 {
		return nil, &Error{Msg: "empty input: expected a JSON object"}
	}
	if bytes.HasPrefix(data, utf8BOM) {
		return nil, &Error{Msg: "invalid JSON at byte 0: a byte order mark (U+FEFF) is not allowed before the value"}
	}
	p := treeParser{dec: jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))}
	root, err := p.value(nil, 0)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimLeft(data[p.dec.InputOffset():], jsonSpace)) != 0 {
		return nil, &Error{Msg: "trailing characters after the JSON value"}
	}
	return root, nil
}

// treeParser builds nodes from jsontext tokens. Duplicate names are checked
// here rather than by jsontext so that the error can say which field.
type treeParser struct {
	dec *jsontext.Decoder
}

// value parses the next value, at path, nested depth containers deep.
func (p *treeParser) value(path *jsonPath, depth int) (*node, error) {
	switch p.dec.PeekKind() {
	case '{':
		return p.object(path, depth+1)
	case '[':
		return p.array(path, depth+1)
	case '"':
		tok, err := p.dec.ReadToken()
		if err != nil {
			return nil, p.syntaxError(path, err)
		}
		return &node{kind: nodeString, text: tok.String()}, nil
	case '0':
		v, err := p.dec.ReadValue()
		if err != nil {
			return nil, p.syntaxError(path, err)
		}
		return &node{kind: nodeNumber, text: string(v)}, nil
	case 't', 'f':
		tok, err := p.dec.ReadToken()
		if err != nil {
			return nil, p.syntaxError(path, err)
		}
		return &node{kind: nodeBool, boolean: tok.Bool()}, nil
	case 'n':
		if _, err := p.dec.ReadToken(); err != nil {
			return nil, p.syntaxError(path, err)
		}
		return &node{kind: nodeNull}, nil
	default:
		// PeekKind reports an error as kind 0; reading yields the error.
		_, err := p.dec.ReadToken()
		if err == nil {
			err = errors.New("unexpected token")
		}
		return nil, p.syntaxError(path, err)
	}
}

func (p *treeParser) object(path *jsonPath, depth int) (*node, error) {
	if depth >= maxDepth {
		return nil, &Error{Path: path.String(), Msg: "nesting too deep: more than " + strconv.Itoa(maxDepth-1) + " arrays/objects inside each other"}
	}
	if _, err := p.dec.ReadToken(); err != nil { // '{'
		return nil, p.syntaxError(path, err)
	}
	n := &node{kind: nodeObject}
	seen := make(map[string]struct{})
	for p.dec.PeekKind() != '}' {
		tok, err := p.dec.ReadToken()
		if err != nil {
			return nil, p.syntaxError(path, err)
		}
		name := tok.String()
		if _, dup := seen[name]; dup {
			return nil, &Error{Path: path.String(), Msg: "duplicate field " + tick(name)}
		}
		seen[name] = struct{}{}
		v, err := p.value(path.field(name), depth)
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{name: name, value: v})
	}
	if _, err := p.dec.ReadToken(); err != nil { // '}'
		return nil, p.syntaxError(path, err)
	}
	return n, nil
}

func (p *treeParser) array(path *jsonPath, depth int) (*node, error) {
	if depth >= maxDepth {
		return nil, &Error{Path: path.String(), Msg: "nesting too deep: more than " + strconv.Itoa(maxDepth-1) + " arrays/objects inside each other"}
	}
	if _, err := p.dec.ReadToken(); err != nil { // '['
		return nil, p.syntaxError(path, err)
	}
	n := &node{kind: nodeArray}
	for p.dec.PeekKind() != ']' {
		v, err := p.value(path.elem(len(n.elems)), depth)
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
	}
	if _, err := p.dec.ReadToken(); err != nil { // ']'
		return nil, p.syntaxError(path, err)
	}
	return n, nil
}

// syntaxError turns a jsontext error into an *Error at path. The text of a
// jsontext error may quote the input, so it is escaped and capped.
func (p *treeParser) syntaxError(path *jsonPath, err error) *Error {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Path: path.String(), Msg: "invalid JSON: unexpected end of input"}
	case errors.As(err, &se):
		return &Error{
			Path: path.String(),
			Msg:  "invalid JSON at byte " + strconv.FormatInt(se.ByteOffset, 10) + ": " + escapeText(se.Err.Error(), 0, maxPathEcho),
		}
	default:
		return &Error{Path: path.String(), Msg: "invalid JSON: " + escapeText(err.Error(), 0, maxPathEcho)}
	}
}
