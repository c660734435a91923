package testutil

import (
	"bytes"
	"encoding/json"
	"path"
	"reflect"
	"strings"
	"testing"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/mod/sumdb/tlog"
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
	r := &invopop.Reflector{RequiredFromJSONSchemaTags: true, ExpandedStruct: true, BaseSchemaID: invopop.ID("https://" + spec.Package),
		Namer: defName, Mapper: jsonMarshalled}
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

// defName names a type's definition: by its name for airlock's own types,
// with its package's name in front for another module's (tlog.RecordProof
// is TlogRecordProof), which may share a name with one of airlock's
// (audit.RecordProof) and would otherwise stand in for it.
func defName(t reflect.Type) string {
	if p := t.PkgPath(); p != "" && p != "github.com/airlock-sandbox/airlock" && !strings.HasPrefix(p, "github.com/airlock-sandbox/airlock/") {
		pkg := path.Base(p)
		return strings.ToUpper(pkg[:1]) + pkg[1:] + t.Name()
	}
	return t.Name()
}

// jsonMarshalled is the schema of the types whose JSON form their own
// MarshalJSON writes, which reflection cannot see: a tlog.Hash is a
// base64 string.
func jsonMarshalled(t reflect.Type) *invopop.Schema {
	if t == reflect.TypeFor[tlog.Hash]() {
		return &invopop.Schema{Type: "string", ContentEncoding: "base64", MinLength: ptr(uint64(44)), MaxLength: ptr(uint64(44)),
			Description: "a SHA-256 hash, base64"}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

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
