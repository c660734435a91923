package enforcer

import (
	"bytes"
	_ "embed"
)

// resultSchemaJSON is generated from Result and its doc comments by
// TestResultSchemaInStep (go test ./enforcer -run TestResultSchemaInStep
// -update), which fails whenever the committed schema and the types
// disagree.
//
//go:embed result.schema.json
var resultSchemaJSON []byte

// ResultSchema returns the JSON Schema (draft 2020-12) of a Result, as
// `airlock schema result` prints it.
func ResultSchema() []byte { return bytes.Clone(resultSchemaJSON) }
