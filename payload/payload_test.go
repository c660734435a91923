package payload

import (
	"bytes"
	"testing"
)

func TestParse(t *testing.T) {
	var out bytes.Buffer
	out.WriteString("noise before\n")
	Emit(&out, Report{Attempt: "a", Evidence: "started"})
	out.WriteString("{not json}\n{\"attempt\":\"\"}\n")
	Emit(&out, Report{Attempt: "a", Succeeded: true, Errno: "EPERM", Evidence: "done", Detail: map[string]string{"k": "v"}})
	reps := Parse(out.Bytes())
	if len(reps) != 2 {
		t.Fatalf("got %d reports, want 2: %+v", len(reps), reps)
	}
	if r := reps[1]; !r.Succeeded || r.Errno != "EPERM" || r.Detail["k"] != "v" {
		t.Errorf("the last report came back as %+v", r)
	}
}

func TestRunUnknown(t *testing.T) {
	if code := Run("no-such-payload", nil); code != 2 {
		t.Errorf("an unknown payload exits %d, want 2", code)
	}
}

// FuzzParse: any output, however broken, parses without panicking, and
// every report it yields names its attempt.
func FuzzParse(f *testing.F) {
	var out bytes.Buffer
	Emit(&out, Report{Attempt: "x", Detail: map[string]string{"a": "b"}})
	f.Add(out.Bytes())
	f.Add([]byte("{\"attempt\":\"y\",\"succeeded\":true}\n{"))
	f.Add([]byte("\x00{\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, r := range Parse(b) {
			if r.Attempt == "" {
				t.Fatalf("a report without an attempt: %+v", r)
			}
		}
	})
}
