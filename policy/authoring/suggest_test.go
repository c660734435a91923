package authoring

import (
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
)

func TestSuggestFromNothing(t *testing.T) {
	for _, name := range []string{"p.json", "p.yaml"} {
		t.Run(name, func(t *testing.T) {
			src := `{"toolScopes": {}}`
			if strings.HasSuffix(name, ".yaml") {
				src = "# the tight start\ntoolScopes: {}\n"
			}
			p := parse(t, name, src)
			recs := writeLog(t,
				denied(t, p, "run_tests", "make", "test"),
				denied(t, p, "read_file", "cat", "/findings/report.txt"),
				denied(t, p, "run_tests", "make", "test"),
				egressDenied(t, p, "run_tests", "pypi.org", 443),
				egressDenied(t, p, "run_tests", "a.cdn.example.com", 443),
				egressDenied(t, p, "run_tests", "b.cdn.example.com", 443),
				egressDenied(t, p, "run_tests", "c.cdn.example.com", 443),
				egressDenied(t, p, "run_tests", "169.254.169.254", 80),
				egressDenied(t, p, "run_tests", "127.0.0.2", 8080),
			)
			got, err := Suggest(p, recs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Suggestions) != 5 || len(got.LeftOut) != 1 || !strings.Contains(got.LeftOut[0].Why, "built-in floor") {
				t.Errorf("suggestions %+v, left out %+v", got.Suggestions, got.LeftOut)
			}
			if strings.HasSuffix(name, ".yaml") && !strings.HasPrefix(string(got.Policy), "# the tight start\n") {
				t.Errorf("the YAML's comment is gone:\n%s", got.Policy)
			}
			np := parse(t, name, string(got.Policy))
			if _, err := CheckExamples(np); err != nil {
				t.Fatal(err)
			}
			d, _ := newDecider(np.Policy, nil)
			for _, ev := range recs {
				if ev.Kind == audit.KindCommand {
					if dec := d.command(ev.Context.Tool, append([]string{ev.Context.Command}, ev.Context.Args...)); !dec.Allowed() {
						t.Errorf("still refused: %v", dec)
					}
				}
			}
		})
	}
}

// TestSuggestKeepsWhatWasThere: what the policy held is written back as
// it means, and in JSON nothing that does not print is written raw.
func TestSuggestKeepsWhatWasThere(t *testing.T) {
	src := "{\"toolScopes\": {\"t\": {\"allow\": [{\"name\": \"ls\", \"command\": \"ls\", \"justification\": \"odd \u202e<b>&\\\"quoted\\\"\"}]}}," +
		" \"caps\": {\"cpuSeconds\": 2.50, \"memoryMb\": 1e3}}"
	p := parse(t, "p.json", src)
	got, err := Suggest(p, writeLog(t, denied(t, p, "t", "cat", "x")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got.Policy), "\u202e") || !strings.Contains(string(got.Policy), `"odd \u202e<b>&\"quoted\""`) ||
		!strings.Contains(string(got.Policy), `"cpuSeconds": 2.50, "memoryMb": 1e3`) {
		t.Errorf("written:\n%s", got.Policy)
	}
	np := parse(t, "p.json", string(got.Policy))
	if !reflect.DeepEqual(np.ToolScopes["t"].Allow[0], p.ToolScopes["t"].Allow[0]) || np.CapsFor("t") != p.CapsFor("t") {
		t.Errorf("what was there changed: %+v", np.ToolScopes["t"].Allow[0])
	}
}
