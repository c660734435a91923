package policy_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock-sandbox/airlock/policy"
)

var update = flag.Bool("update", false, "rewrite generated files (schema.json)")

// generateSchema reflects the Go types, with their doc comments, into a
// JSON Schema.
func generateSchema(t *testing.T) []byte {
	t.Helper()
	r := &invopop.Reflector{
		RequiredFromJSONSchemaTags: true,
		ExpandedStruct:             true,
		BaseSchemaID:               "https://github.com/airlock-sandbox/airlock/policy",
	}
	if err := r.AddGoComments("github.com/airlock-sandbox/airlock/policy", "./"); err != nil {
		t.Fatal(err)
	}
	s := r.Reflect(&policy.Policy{})
	s.Title = "airlock policy"
	s.Description = "An airlock policy file (JSON, or YAML with the same structure)."
	s.ID = "https://github.com/airlock-sandbox/airlock/policy.schema.json"
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
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
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(policy.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("policy.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("policy.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
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
