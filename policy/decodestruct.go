package policy

// field describes one member of a Rust struct as serde sees it: its name,
// whether it is required (no #[serde(default)]), and how to decode it.
type field struct {
	name     string
	required bool
	decode   func(n *node, path *jsonPath) error
}

// unknownFieldWhy is why this helper, unlike serde, refuses unknown fields.
const unknownFieldWhy = "refused because a field this helper does not know may be a restriction it would silently drop"

// decodeStruct decodes the object n at path into fields, in document order,
// the way serde's derived Deserialize does: fields missing from the object
// keep whatever default the caller set before, required ones are reported
// after the whole object was read. what names the struct for a type error
// ("a JSON object (a writable root)"); context, when not empty, is added to
// an unknown-field message ("for policy type `read_only`"). A member named skip
// (the enum tag) is ignored.
func decodeStruct(n *node, path *jsonPath, what, context, skip string, fields []field) error {
	if n.kind != nodeObject {
		return typeError(path, what, n)
	}
	seen := make([]bool, len(fields))
	for _, m := range n.members {
		if skip != "" && m.name == skip {
			continue
		}
		i := fieldIndex(fields, m.name)
		if i < 0 {
			msg := "unknown field " + tick(m.name)
			if context != "" {
				msg += " " + context
			}
			return &Error{Path: path.String(), Msg: msg + ": " + unknownFieldWhy}
		}
		seen[i] = true
		if err := fields[i].decode(m.value, path.field(m.name)); err != nil {
			return err
		}
	}
	for i, f := range fields {
		if f.required && !seen[i] {
			return &Error{Path: path.String(), Msg: "missing field `" + f.name + "`"}
		}
	}
	return nil
}

func fieldIndex(fields []field, name string) int {
	for i, f := range fields {
		if f.name == name {
			return i
		}
	}
	return -1
}

// Field constructors for the scalar types.

func boolField(name string, dst *bool) field {
	return field{name: name, decode: func(n *node, p *jsonPath) (err error) {
		*dst, err = decodeBool(n, p)
		return err
	}}
}

func stringField(name string, required bool, dst *string) field {
	return field{name: name, required: required, decode: func(n *node, p *jsonPath) (err error) {
		*dst, err = decodeString(n, p)
		return err
	}}
}

func uint64Field(name string, dst *uint64) field {
	return field{name: name, decode: func(n *node, p *jsonPath) (err error) {
		*dst, err = decodeUint(n, p, 64)
		return err
	}}
}

func uint32Field(name string, dst *uint32) field {
	return field{name: name, decode: func(n *node, p *jsonPath) error {
		v, err := decodeUint(n, p, 32)
		*dst = uint32(v)
		return err
	}}
}

func uint16Field(name string, dst *uint16) field {
	return field{name: name, decode: func(n *node, p *jsonPath) error {
		v, err := decodeUint(n, p, 16)
		*dst = uint16(v)
		return err
	}}
}
