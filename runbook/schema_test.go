package runbook_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/runbook"
)

var update = flag.Bool("update", false, "rewrite generated files (schemas/plan.schema.json)")

// schemaFile is the plan's JSON Schema, generated from the Go types.
const schemaFile = "../schemas/plan.schema.json"

// generatePlanSchema reflects the plan types, with their doc comments,
// into a JSON Schema.
func generatePlanSchema(t *testing.T) []byte {
	return testutil.GenerateSchema(t, testutil.SchemaSpec{
		Value: &runbook.Plan{}, Package: "github.com/airlock-sandbox/airlock/runbook", Dir: "./",
		ID:          "https://github.com/airlock-sandbox/airlock/plan.schema.json",
		Title:       "airlock test plan",
		Description: "A test plan for \"airlock launch --plan\": the steps one sandbox runs, in order, in one workspace.",
	})
}

// TestPlanSchemaInStep fails when schemas/plan.schema.json and the Go
// types disagree.
func TestPlanSchemaInStep(t *testing.T) {
	want := generatePlanSchema(t)
	if *update {
		if err := os.WriteFile(schemaFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("schemas/plan.schema.json is out of step with the Go types; run: go test ./runbook -run TestPlanSchemaInStep -update")
	}
}

func compilePlanSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.CompileSchema(t, data)
}

// TestPlanSchemaAgreesWithLoader validates the example plan and every
// sample plan against the schema and checks that the schema and the
// loader agree: good-* and the example pass both, bad-* fail the loader
// and the schema (bad-semantic-* only the loader: rules a schema cannot
// say, such as unique step names).
func TestPlanSchemaAgreesWithLoader(t *testing.T) {
	s := compilePlanSchema(t)
	files, _ := filepath.Glob("testdata/*.json")
	files = append(files, "../examples/plan.json")
	if len(files) < 5 {
		t.Fatalf("only %d sample plans found", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(f)
		_, loadErr := runbook.ParsePlan(f, data)
		doc, jerr := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		var schemaErr error = jerr
		if jerr == nil {
			schemaErr = s.Validate(doc)
		}
		bad := strings.HasPrefix(base, "bad-")
		switch {
		case !bad && (schemaErr != nil || loadErr != nil):
			t.Errorf("%s: good sample rejected: schema: %v; loader: %v", f, schemaErr, loadErr)
		case bad && loadErr == nil:
			t.Errorf("%s: bad sample accepted by the loader", f)
		case bad && jerr == nil && schemaErr == nil && !strings.HasPrefix(base, "bad-semantic-"):
			t.Errorf("%s: bad sample accepted by the schema (name it bad-semantic-* if only the loader can catch it)", f)
		}
	}
}
