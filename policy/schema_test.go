package policy_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/policy"
)

var update = flag.Bool("update", false, "rewrite generated files (schema.json)")

// generateSchema reflects the Go types, with their doc comments, into a
// JSON Schema.
func generateSchema(t *testing.T) []byte {
	return testutil.GenerateSchema(t, testutil.SchemaSpec{
		Value: &policy.Policy{}, Package: "github.com/airlock-sandbox/airlock/policy", Dir: "./",
		ID:          "https://github.com/airlock-sandbox/airlock/policy.schema.json",
		Title:       "airlock policy",
		Description: "An airlock policy file (JSON, or YAML with the same structure).",
	})
}

func TestSchemaInStep(t *testing.T) {
	want := generateSchema(t)
	if *update {
		if err := os.WriteFile("schema.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(policy.Schema(), want) {
		t.Fatal("schema.json is out of step with the Go types; run: go test ./policy -run TestSchemaInStep -update")
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	return testutil.CompileSchema(t, policy.Schema())
}

// TestSchemaAgreesWithLoader validates every sample policy against the
// schema and checks that the schema and the loader agree on it.
func TestSchemaAgreesWithLoader(t *testing.T) {
	s := compileSchema(t)
	files, _ := filepath.Glob("testdata/*.json")
	files = append(files, "default.json")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			continue // not JSON at all: only the loader has something to say
		}
		schemaErr := s.Validate(doc)
		_, loadErr := policy.Parse(f, data)
		bad := strings.HasPrefix(filepath.Base(f), "bad-")
		switch {
		case !bad && (schemaErr != nil || loadErr != nil):
			t.Errorf("%s: good sample rejected: schema: %v; loader: %v", f, schemaErr, loadErr)
		case bad && loadErr == nil:
			t.Errorf("%s: bad sample accepted by the loader", f)
		case bad && schemaErr == nil && !strings.HasPrefix(filepath.Base(f), "bad-semantic-"):
			t.Errorf("%s: bad sample accepted by the schema (name it bad-semantic-* if only validation can catch it)", f)
		}
	}
}
