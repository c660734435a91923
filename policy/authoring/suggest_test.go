package authoring

import (
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
			t.Logf("%s", got.Policy)
			for _, s := range got.Suggestions {
				t.Logf("%s %v %v", s.Summary, s.Records, s.Risks)
			}
			for _, l := range got.LeftOut {
				t.Logf("left out: %s: %s %v", l.Subject, l.Why, l.Records)
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
