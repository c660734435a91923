package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

// ocsfSpec is testdata/ocsf-1.7.0-required.json: what OCSF 1.7.0 requires
// of the classes and objects the export writes.
type ocsfSpec struct {
	Classes map[string]struct {
		CategoryUID int               `json:"category_uid"`
		ActivityIDs []int             `json:"activity_ids"`
		Required    []string          `json:"required"`
		AtLeastOne  [][]string        `json:"at_least_one"`
		Objects     map[string]string `json:"objects"`
	} `json:"classes"`
	Objects map[string]struct {
		Required   []string          `json:"required"`
		AtLeastOne [][]string        `json:"at_least_one"`
		Objects    map[string]string `json:"objects"`
	} `json:"objects"`
	SeverityIDs []int `json:"severity_ids"`
}

// check returns what ev misses of the spec.
func (s *ocsfSpec) check(ev map[string]any) []string {
	var bad []string
	num := func(k string) int { f, _ := ev[k].(float64); return int(f) }
	class := strconv.Itoa(num("class_uid"))
	c, ok := s.Classes[class]
	if !ok {
		return []string{"class_uid " + class + " is not one the export may write"}
	}
	bad = append(bad, need("event", ev, c.Required, c.AtLeastOne)...)
	if num("category_uid") != c.CategoryUID {
		bad = append(bad, "category_uid is not the class's")
	}
	if !slices.Contains(c.ActivityIDs, num("activity_id")) {
		bad = append(bad, "activity_id is not one of the class's")
	}
	if num("type_uid") != num("class_uid")*100+num("activity_id") {
		bad = append(bad, "type_uid is not class_uid*100+activity_id")
	}
	if !slices.Contains(s.SeverityIDs, num("severity_id")) {
		bad = append(bad, "severity_id out of its enum")
	}
	if _, ok := ev["time"].(float64); !ok {
		bad = append(bad, "time is not a number (timestamp_t, ms)")
	}
	for attr, obj := range c.Objects {
		bad = append(bad, s.object(attr, obj, ev[attr])...)
	}
	if m, _ := ev["metadata"].(map[string]any); m["version"] != OCSFVersion {
		bad = append(bad, "metadata.version is not "+OCSFVersion)
	}
	return bad
}

func (s *ocsfSpec) object(path, name string, v any) []string {
	if v == nil {
		return nil // its presence is the class's to require
	}
	m, ok := v.(map[string]any)
	if !ok {
		return []string{path + " is not an object"}
	}
	o := s.Objects[name]
	bad := need(path, m, o.Required, o.AtLeastOne)
	for attr, obj := range o.Objects {
		bad = append(bad, s.object(path+"."+attr, obj, m[attr])...)
	}
	return bad
}

func need(path string, m map[string]any, required []string, atLeastOne [][]string) []string {
	var bad []string
	for _, r := range required {
		if _, ok := m[r]; !ok {
			bad = append(bad, path+" lacks the required "+r)
		}
	}
	for _, set := range atLeastOne {
		if !slices.ContainsFunc(set, func(k string) bool { _, ok := m[k]; return ok }) {
			bad = append(bad, path+" has none of "+strings.Join(set, ", "))
		}
	}
	return bad
}

// TestOCSFExportHasRequiredAttributes exports a log holding every kind of
// record and checks each OCSF event against the attributes OCSF 1.7.0
// requires of its class and objects.
func TestOCSFExportHasRequiredAttributes(t *testing.T) {
	var spec ocsfSpec
	b, err := os.ReadFile("testdata/ocsf-1.7.0-required.json")
	if err != nil || json.Unmarshal(b, &spec) != nil {
		t.Fatalf("spec: %v", err)
	}
	if bad := spec.check(map[string]any{"class_uid": 1007.0, "category_uid": 1.0, "activity_id": 1.0, "type_uid": 100701.0}); len(bad) < 5 {
		t.Fatalf("the check passes an event without the required attributes: %v", bad)
	}
	clk := newTestClock()
	l, path := openTest(t, WithClock(clk.now))
	run := Context{RunID: "run-1", Tool: "run_tests", Task: "run_tests", Command: "pytest", Args: []string{"-v"}, Path: "/usr/bin/pytest"}
	zero := 0
	egress := func(proto, verdict string) Event {
		v := decision.Deny
		if verdict == "allow" {
			v = decision.Allow
		}
		return FromDecision(decision.Decision{Gate: decision.GateEgress, Verdict: v, Reason: "egress " + verdict},
			Context{RunID: "run-1", Task: "run_tests", Host: "evil.example\xff", Port: 443, Protocol: proto,
				Addresses: []string{"192.0.2.1"}, Details: map[string]string{"client": "127.0.0.1:40001"}})
	}
	events := []Event{
		FromDecision(decision.Decision{Gate: decision.GateCommand, Verdict: decision.Allow, Reason: "allowed"}, run),
		denial("run_tests", "git", "clone"),
		{Kind: KindLifecycle, Decision: DecisionInfo, Reason: "launched", Context: Context{RunID: "run-1", Event: EventSandboxLaunched}},
		egress("connect", "deny"), egress("http", "allow"), egress("socks5", "deny"), egress("socks5", "allow"),
		{Kind: KindEgress, Decision: DecisionInfo, Reason: "closed", Context: Context{RunID: "run-1", Host: "a.example", Port: 443, Protocol: "socks5"}},
		{Kind: KindResource, Decision: DecisionInfo, Reason: "exit 0", Context: withExit(run, &zero)},
		{Kind: KindResource, Decision: DecisionKill, Reason: "killed", Context: Context{RunID: "run-1", KilledBy: "wall"}},
		{Kind: KindBehavioral, Decision: DecisionAlert, Reason: "burst", Context: Context{RunID: "run-1", Alert: "egress_deny_burst", TriggerSeqs: []uint64{5, 7}, Count: 2}},
		{Kind: KindLifecycle, Decision: DecisionInfo, Reason: "down", Context: Context{RunID: "run-1", Event: EventSandboxTornDown}},
		{Kind: KindLifecycle, Decision: DecisionInfo, Reason: "abandoned", Context: Context{RunID: "run-2", Event: EventRunAbandoned}},
	}
	for _, ev := range events {
		if _, err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.Open(path)
	defer f.Close()
	var out bytes.Buffer
	rep, n, err := ExportOCSF(&out, f, Filter{}, OCSFSource{Host: "build-7"})
	if err != nil || n != len(events) || rep.Events != len(events)+1 {
		t.Fatalf("export: %d events, %v", n, err)
	}
	classes := map[int]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if bad := spec.check(ev); len(bad) > 0 {
			t.Errorf("%s:\n  %s", line, strings.Join(bad, "\n  "))
		}
		classes[int(ev["class_uid"].(float64))]++
	}
	if classes[1007] != 7 || classes[4002] != 2 || classes[4001] != 3 || classes[2004] != 1 {
		t.Errorf("classes written: %v", classes)
	}
	if !strings.Contains(out.String(), `"hostname":{"base64":"ZXZpbC5leGFtcGxl/w=="}`) {
		t.Errorf("a host name that is not UTF-8 lost its bytes")
	}
	// A tampered log is exported only up to its first bad line.
	lines := readLines(t, path)
	lines[3] = bytes.Replace(lines[3], []byte("launched"), []byte("LAUNCHED"), 1)
	out.Reset()
	if _, n, err := ExportOCSF(&out, bytes.NewReader(join(lines)), Filter{}, OCSFSource{}); err == nil || n != 2 {
		t.Fatalf("tampered: %d events, %v", n, err)
	}
}

func withExit(c Context, code *int) Context { c.ExitCode = code; return c }
