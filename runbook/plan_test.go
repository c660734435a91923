package runbook_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cmdgate"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/runbook"
	"github.com/airlock-sandbox/airlock/sandbox"
)

func TestParsePlanGood(t *testing.T) {
	p, err := runbook.LoadPlan("../examples/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.TestID != "T-2026-001" || len(p.Steps) != 2 || p.EffectiveTask() != "run_tests" {
		t.Fatalf("example plan read as %+v", p)
	}
	if !p.Steps[0].ContinueOnFailure || p.Steps[0].Command != "make" || p.Steps[1].Args[0] != "/findings/report.txt" {
		t.Fatalf("steps read as %+v", p.Steps)
	}
	one, err := runbook.ParsePlan("p.json", []byte(`{"testId":"t","steps":[{"tool":"read_file","command":"cat"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := one.EffectiveTask(); got != "read_file" {
		t.Fatalf("task of a one-tool plan = %q, want the tool's name", got)
	}
	if got := one.Steps[0].Label(0); got != "step 1" {
		t.Fatalf("label of an unnamed first step = %q", got)
	}
}

// TestParsePlanErrors checks that each malformed plan is refused with
// the file, line, column, field and a fixed message.
func TestParsePlanErrors(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"empty", "  \n", "p.json:1:1: empty plan"},
		{"not an object", `[1]`, "p.json:1:1: expected an object, found an array"},
		{"syntax", "{\"testId\": \"t\",\n \"steps\": [}", "p.json:2:"},
		{"truncated", `{"testId": "t", "steps": [`, "unexpected end of input"},
		{"trailing", `{"testId":"t","steps":[{"tool":"a","command":"b"}]} {}`, "p.json:1:53: trailing data after the plan object"},
		{"unknown", `{"testId":"t","steps":[{"tool":"a","command":"b","argz":[]}]}`,
			`p.json:1:50: steps[0].argz: unknown field "argz"` + "\n\thint: did you mean \"args\"?"},
		{"case", `{"testid":"t","steps":[]}`, `p.json:1:2: testid: unknown field "testid"` + "\n\thint: did you mean \"testId\"?"},
		{"duplicate", `{"testId":"t","steps":[{"tool":"a","command":"b","command":"rm"}]}`, `p.json:1:50: duplicate key "command" (first at line 1, column 36)`},
		{"null", `{"testId":"t","task":null,"steps":[]}`, "p.json:1:22: task: expected a string, found null"},
		{"number arg", `{"testId":"t","steps":[{"tool":"a","command":"b","args":[1]}]}`, "p.json:1:58: steps[0].args[0]: expected a string, found a number"},
		{"bool", `{"testId":"t","steps":[{"tool":"a","command":"b","continueOnFailure":1}]}`, "steps[0].continueOnFailure: expected a boolean, found a number"},
		{"no test id", `{"steps":[{"tool":"a","command":"b"}]}`, "p.json: testId: missing or empty testId"},
		{"bad test id", `{"testId":"a/b","steps":[{"tool":"a","command":"b"}]}`, `p.json:1:11: testId: testId "a/b": use 1 to 128 letters`},
		{"no steps", `{"testId":"t","steps":[]}`, "p.json:1:23: steps: a plan needs at least one step"},
		{"no command", `{"testId":"t","steps":[{"tool":"a"}]}`, "p.json:1:24: steps[0]: missing or empty command"},
		{"no tool", `{"testId":"t","steps":[{"command":"a"}]}`, "steps[0]: missing or empty tool"},
		{"dup name", `{"testId":"t","steps":[{"name":"x","tool":"a","command":"b"},{"name":"x","tool":"a","command":"b"}]}`,
			`steps[1].name: name "x" is also the name of steps[0]`},
		{"nul", `{"testId":"t","steps":[{"tool":"a","command":"b","args":["x\u0000y"]}]}`, "steps[0].args[0]: argument holds a NUL byte"},
		{"two tools", `{"testId":"t","steps":[{"tool":"a","command":"b"},{"tool":"c","command":"b"}]}`,
			`steps: the steps use several tools ("a", "c") and the plan names no task`},
		{"big", `{"testId":"` + strings.Repeat("x", runbook.MaxPlanBytes) + `"}`, "p.json: plan is larger than 1048576 bytes"},
		{"tool with a space", `{"testId":"t","steps":[{"tool":"read file","command":"cat"}]}`,
			"p.json:1:32: steps[0].tool: tool must be a name of at most 128 bytes, without white space or control characters"},
		{"task with a tab", `{"testId":"t","task":"web\tsearch","steps":[{"tool":"a","command":"cat"}]}`,
			"p.json:1:22: task: task must be a name of at most 128 bytes, without white space or control characters"},
		{"invalid UTF-8", "{\"testId\":\"t\",\"steps\":[{\"tool\":\"a\",\"command\":\"c\xffat\"}]}", "p.json:1:48: invalid UTF-8 (byte 0xff)"},
		{"raw escape", "{\"testId\":\"t\",\"steps\":[{\"tool\":\"a\",\"command\":\"cat\"}]}\n\x1b[2J", "p.json:2:1: control character U+001B in the plan"},
		{"deep", `{"testId":"t","steps":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}", "p.json:1:55: nesting too deep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := runbook.ParsePlan("p.json", []byte(c.data))
			if err == nil {
				t.Fatalf("accepted: %+v", p)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, c.want)
			}
			var pe *runbook.PlanError
			if !errors.As(err, &pe) || pe.File != "p.json" {
				t.Fatalf("error %T does not carry the file name", err)
			}
		})
	}
}

// TestLoadPlanRefusesNonRegular: a FIFO, a directory or a device as the
// plan is refused at once, never read (a FIFO would block "airlock launch"
// until someone wrote to it).
func TestLoadPlanRefusesNonRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "plan.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:         "is a named pipe (FIFO), not a regular file",
		t.TempDir():  "is a directory, not a regular file",
		"/dev/zero":  "is a character device, not a regular file",
		"/nonexist/": "no such file or directory",
	} {
		done := make(chan error, 1)
		go func() { _, err := runbook.LoadPlan(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.HasPrefix(err.Error(), "plan: ") || !strings.Contains(err.Error(), want) {
				t.Errorf("LoadPlan(%s): %v, want %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("LoadPlan(%s) blocked", path)
		}
	}
}

func TestParsePlanManySteps(t *testing.T) {
	steps := strings.Repeat(`{"tool":"a","command":"b"},`, runbook.MaxSteps)
	_, err := runbook.ParsePlan("p.json", []byte(`{"testId":"t","steps":[`+steps+`{"tool":"a","command":"b"}]}`))
	if err == nil || !strings.Contains(err.Error(), "more than 1000 steps") {
		t.Fatalf("error = %v, want more than 1000 steps", err)
	}
}

// FuzzParsePlan feeds arbitrary bytes to the plan loader. It must never
// panic; every error names the file; a plan it accepts survives a round
// trip through encoding/json unchanged and is accepted again.
func FuzzParsePlan(f *testing.F) {
	f.Add([]byte(`{"testId":"t","steps":[{"tool":"a","command":"b","args":["x"],"continueOnFailure":true}]}`))
	f.Add([]byte(`{"testId":"t","task":"k","steps":[{"name":"n","tool":"a","command":"b"},{"tool":"c","command":"d"}]}`))
	f.Add([]byte(`{"testId":"t","steps":[{"tool":"a","command":"b","command":"c"}]}`))
	f.Add([]byte(`{"testId":"t","steps":[]} x`))
	f.Add([]byte(`{"testId":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := runbook.ParsePlan("fuzz.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the file: %q", err)
			}
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := runbook.ParsePlan("again.json", out)
		if err != nil {
			t.Fatalf("accepted plan does not reload: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normalisePlan(p), normalisePlan(again)) {
			t.Fatalf("round trip changed the plan:\n%s", out)
		}
	})
}

// normalisePlan maps empty slices to nil, which omitempty drops.
func normalisePlan(p *runbook.Plan) *runbook.Plan {
	q := *p
	q.Steps = append([]runbook.Step(nil), p.Steps...)
	for i := range q.Steps {
		if len(q.Steps[i].Args) == 0 {
			q.Steps[i].Args = nil
		}
	}
	return &q
}

// TestExamplePlanAllowed keeps examples/plan.json runnable under the
// embedded default policy: every step is allowed.
func TestExamplePlanAllowed(t *testing.T) {
	p, err := runbook.LoadPlan("../examples/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	g := cmdgate.Compile(policy.Default().Policy)
	for i, s := range p.Steps {
		if d := g.Decide(s.Tool, s.Command, s.Args, sandbox.WorkspaceDir); !d.Allowed() {
			t.Errorf("%s: %v", s.Label(i), d)
		}
	}
}
