package report

import _ "embed"

// Schema is the report's JSON Schema (draft 2020-12).
//
//go:embed schema.json
var Schema []byte
