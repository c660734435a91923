package policy

import (
	"bytes"
	_ "embed"
)

// schemaJSON is generated from the Go types by TestSchemaInStep
// (go test ./policy -run TestSchemaInStep -update), which fails whenever
// the committed schema and the types disagree.
//
//go:embed schema.json
var schemaJSON []byte

// Schema returns the JSON Schema (draft 2020-12) of a policy file.
func Schema() []byte { return bytes.Clone(schemaJSON) }
