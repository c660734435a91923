package enforcer_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite generated files (result.schema.json)")

func TestResultSchemaInStep(t *testing.T) {
	want := testutil.GenerateSchema(t, testutil.SchemaSpec{
		Value: &enforcer.Result{}, Package: "github.com/airlock-sandbox/airlock/enforcer", Dir: "./",
		ID:    "https://github.com/airlock-sandbox/airlock/result.schema.json",
		Title: "airlock result",
		Description: "The result of one command run by airlock (airlock run --json, airlock session exec --json, --result): " +
			"its decision, refusal, exit, caps, egress decisions, alerts and receipt. See docs/result.md.",
	})
	if *update {
		if err := os.WriteFile("result.schema.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(enforcer.ResultSchema(), want) {
		t.Fatal("result.schema.json is out of step with the Go types; run: go test ./enforcer -run TestResultSchemaInStep -update")
	}
}

var resultSchema *jsonschema.Schema

// checkResult fails t unless res, as JSON, is valid against the
// published result schema.
func checkResult(t *testing.T, res enforcer.Result) {
	t.Helper()
	if resultSchema == nil {
		resultSchema = testutil.CompileSchema(t, enforcer.ResultSchema())
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := resultSchema.Validate(doc); err != nil {
		t.Errorf("result does not match the published schema: %v\n%s", err, b)
	}
}

// TestResultSchemaRefuses: the schema is strict enough to catch a result
// that breaks the contract, and accepts a setup failure and a captured
// run's result.
func TestResultSchemaRefuses(t *testing.T) {
	s := testutil.CompileSchema(t, enforcer.ResultSchema())
	good := enforcer.SetupResult("run-1", "", 1, errors.New("no policy"))
	checkResult(t, good)
	c := enforcer.NewCapture(4)
	c.Write([]byte("hello\xff"))
	good.Stdout = c.Output()
	if *good.Stdout != (enforcer.Output{Text: "hell", Bytes: 6, Truncated: true}) {
		t.Errorf("capture %+v", *good.Stdout)
	}
	checkResult(t, good)
	b, _ := json.Marshal(good)
	for _, bad := range []struct{ from, to string }{
		{`"schemaVersion":1`, `"schemaVersion":2`},
		{`"exitCode":125`, `"exitCode":"125"`},
		{`"refusal":null`, `"refusal":{"gate":"command"}`},
		{`"runId":"run-1"`, `"runId":"run-1","surprise":true`},
		{`"decision":"deny"`, `"decision":"maybe"`},
	} {
		mod := bytes.Replace(b, []byte(bad.from), []byte(bad.to), 1)
		if bytes.Equal(mod, b) {
			t.Fatalf("%s is not in %s", bad.from, b)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mod))
		if err != nil {
			t.Fatal(err)
		}
		if s.Validate(doc) == nil {
			t.Errorf("the schema accepts %s", mod)
		}
	}
}
