package policy_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// FuzzParse feeds arbitrary bytes to the loader, as JSON and as YAML. It
// must never panic; an error must name the file; and a policy it accepts
// must survive a round trip through encoding/json unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte(seedJSON), false)
	f.Add([]byte(`{"toolScopes": {"t": {"allow": [{"name": "x", "command": "ls"}]}}, "caps": {"memoryMb": 1}}`), false)
	f.Add([]byte("toolScopes:\n  t:\n    allow: [{name: x, command: ls}]\n"), true)
	f.Add([]byte(`{"toolScopes": {}} trailing`), false)
	f.Add([]byte("\xef\xbb\xbftoolScopes: !foo {a: &x [1, *x]}\n- - - [[{'q''[' : \"[\\\"\"}]] # [\n"), true)
	f.Add([]byte("description: |\n  [[[[ - - -\ntoolScopes: {t: {allow: [{name: x, command: ls}]}}\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, yaml bool) {
		name := "fuzz.json"
		if yaml {
			name = "fuzz.yaml"
		}
		l, err := policy.Parse(name, data)
		if err != nil {
			if err.Error() == "" || err.Error()[:len(name)] != name {
				t.Fatalf("error does not name the file: %q", err)
			}
			return
		}
		out, err := json.Marshal(l.Policy)
		if err != nil {
			t.Fatal(err)
		}
		again, err := policy.Parse("again.json", out)
		if err != nil {
			t.Fatalf("accepted policy does not reload: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normalise(l.Policy), normalise(again.Policy)) {
			t.Fatalf("round trip changed the policy:\n%s", out)
		}
	})
}

// normalise maps empty slices and maps to nil, which omitempty drops.
func normalise(p *policy.Policy) *policy.Policy {
	b, _ := json.Marshal(p)
	var q policy.Policy
	_ = json.Unmarshal(b, &q)
	return &q
}
