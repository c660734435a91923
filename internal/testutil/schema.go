package testutil

import (
	"bytes"
	"encoding/json"
	"testing"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaSpec names a JSON Schema generated from Go types.
type SchemaSpec struct {
	// Value is a pointer to the root struct.
	Value any
	// Package is its import path and Dir the directory of its source,
	// whose doc comments become the schema's descriptions.
	Package, Dir string
	// ID, Title and Description head the schema.
	ID, Title, Description string
}

// GenerateSchema reflects spec's Go types, with their doc comments, into a
// JSON Schema (draft 2020-12): fields are required only when tagged
// jsonschema:"required", and no other property is allowed.
func GenerateSchema(t testing.TB, spec SchemaSpec) []byte {
	t.Helper()
	r := &invopop.Reflector{RequiredFromJSONSchemaTags: true, ExpandedStruct: true, BaseSchemaID: invopop.ID("https://" + spec.Package)}
	if err := r.AddGoComments(spec.Package, spec.Dir); err != nil {
		t.Fatal(err)
	}
	s := r.Reflect(spec.Value)
	s.ID, s.Title, s.Description = invopop.ID(spec.ID), spec.Title, spec.Description
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// CompileSchema compiles a JSON Schema for validating samples.
func CompileSchema(t testing.TB, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
