package audit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// ocsfSpec is testdata/ocsf-1.7.0.json: what OCSF 1.7.0 defines of the
// classes the export writes and of the objects in them, derived from the
// schema's sources (its "source" says how): each attribute's type, the
// required ones, and the types' constraints.
type ocsfSpec struct {
	Classes map[string]struct {
		CategoryUID int `json:"category_uid"`
		ocsfObject
	} `json:"classes"`
	Objects map[string]ocsfObject `json:"objects"`
	Types   map[string]struct {
		Base   string `json:"base"`
		Regex  string `json:"regex"`
		MaxLen int    `json:"max_len"`
		Range  []int  `json:"range"`
	} `json:"types"`
	pattern map[string]*regexp.Regexp // each type's regex, compiled
}

// ocsfObject is what OCSF defines of a class or an object.
type ocsfObject struct {
	Required   []string            `json:"required"`
	AtLeastOne [][]string          `json:"at_least_one"`
	Attributes map[string]ocsfAttr `json:"attributes"`
}

// ocsfAttr is an attribute: its type (a _t type, else an object's name,
// or "object" for any object), whether it is an array, the profile it
// belongs to, and its enum values.
type ocsfAttr struct {
	Type    string `json:"type"`
	Array   bool   `json:"array"`
	Profile string `json:"profile"`
	Enum    []int  `json:"enum"`
}

func loadOCSFSpec(t testing.TB) *ocsfSpec {
	t.Helper()
	var spec ocsfSpec
	b, err := os.ReadFile("testdata/ocsf-1.7.0.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatalf("spec: %v", err)
	}
	spec.pattern = map[string]*regexp.Regexp{}
	for name, ty := range spec.Types {
		if ty.Regex != "" {
			spec.pattern[name] = regexp.MustCompile(ty.Regex)
		}
	}
	return &spec
}

// check returns what ev, as a JSON reader decoded it, does wrong by the
// spec: an attribute its class or object lacks (or whose profile the
// event does not declare), a value not of the attribute's type, a
// missing required attribute.
func (s *ocsfSpec) check(ev map[string]any) []string {
	num := func(k string) int { f, _ := ev[k].(float64); return int(f) }
	class := strconv.Itoa(num("class_uid"))
	c, ok := s.Classes[class]
	if !ok {
		return []string{"class_uid " + class + " is not one the export may write"}
	}
	var bad []string
	if num("category_uid") != c.CategoryUID {
		bad = append(bad, "category_uid is not the class's")
	}
	if num("type_uid") != num("class_uid")*100+num("activity_id") {
		bad = append(bad, "type_uid is not class_uid*100+activity_id")
	}
	m, _ := ev["metadata"].(map[string]any)
	if m["version"] != OCSFVersion {
		bad = append(bad, "metadata.version is not "+OCSFVersion)
	}
	profiles := map[string]bool{}
	if ps, ok := m["profiles"].([]any); ok {
		for _, p := range ps {
			if p, ok := p.(string); ok {
				profiles[p] = true
			}
		}
	}
	return append(bad, s.object("event", c.ocsfObject, ev, profiles)...)
}

func (s *ocsfSpec) object(path string, o ocsfObject, m map[string]any, profiles map[string]bool) []string {
	var bad []string
	for _, r := range o.Required {
		if _, ok := m[r]; !ok {
			bad = append(bad, path+" lacks the required "+r)
		}
	}
	for _, set := range o.AtLeastOne {
		if !slices.ContainsFunc(set, func(k string) bool { _, ok := m[k]; return ok }) {
			bad = append(bad, path+" has none of "+strings.Join(set, ", "))
		}
	}
	for k, v := range m {
		a, ok := o.Attributes[k]
		switch {
		case !ok:
			bad = append(bad, path+"."+k+" is not an attribute of it")
		case a.Profile != "" && !profiles[a.Profile]:
			bad = append(bad, path+"."+k+" is of the profile "+a.Profile+", which metadata.profiles does not name")
		case a.Array:
			l, ok := v.([]any)
			if !ok {
				bad = append(bad, fmt.Sprintf("%s.%s is not an array: %v", path, k, v))
			}
			for i, e := range l {
				bad = append(bad, s.value(fmt.Sprintf("%s.%s[%d]", path, k, i), a, e, profiles)...)
			}
		default:
			bad = append(bad, s.value(path+"."+k, a, v, profiles)...)
		}
	}
	return bad
}

// value checks one value against its attribute's type.
func (s *ocsfSpec) value(path string, a ocsfAttr, v any, profiles map[string]bool) []string {
	if !strings.HasSuffix(a.Type, "_t") {
		m, ok := v.(map[string]any)
		switch o, known := s.Objects[a.Type]; {
		case !ok:
			return []string{fmt.Sprintf("%s is not an object (%s): %v", path, a.Type, v)}
		case a.Type == "object":
			return nil
		case !known:
			return []string{path + " is a " + a.Type + ", an object the spec does not hold"}
		default:
			return s.object(path, o, m, profiles)
		}
	}
	ty, ok := s.Types[a.Type]
	if !ok {
		return []string{path + ": type " + a.Type + " is not in the spec"}
	}
	switch ty.Base {
	case "string_t":
		str, ok := v.(string)
		switch {
		case !ok:
			return []string{fmt.Sprintf("%s is not a string (%s): %v", path, a.Type, v)}
		case ty.MaxLen > 0 && utf8.RuneCountInString(str) > ty.MaxLen:
			return []string{fmt.Sprintf("%s is longer than %s's %d: %q", path, a.Type, ty.MaxLen, str)}
		case s.pattern[a.Type] != nil && !s.pattern[a.Type].MatchString(str):
			return []string{fmt.Sprintf("%s does not match %s's pattern: %q", path, a.Type, str)}
		}
	case "integer_t", "long_t":
		f, ok := v.(float64)
		switch {
		case !ok || f != math.Trunc(f):
			return []string{fmt.Sprintf("%s is not an integer (%s): %v", path, a.Type, v)}
		case len(ty.Range) == 2 && (f < float64(ty.Range[0]) || f > float64(ty.Range[1])):
			return []string{fmt.Sprintf("%s is out of %s's range %v: %v", path, a.Type, ty.Range, f)}
		case len(a.Enum) > 0 && !slices.Contains(a.Enum, int(f)):
			return []string{fmt.Sprintf("%s is not one of its enum %v: %v", path, a.Enum, f)}
		}
	case "boolean_t":
		if _, ok := v.(bool); !ok {
			return []string{fmt.Sprintf("%s is not a boolean: %v", path, v)}
		}
	default:
		return []string{path + ": base type " + ty.Base + " is not checked"}
	}
	return nil
}

// TestOCSFExportMatchesTheSchema exports a log holding every kind of
// record, bytes that are not UTF-8 among them, and checks each OCSF event,
// as encoding/json reads it, against what OCSF 1.7.0 defines of its class
// and objects: no attribute it lacks, every value of its attribute's type
// (a string attribute a string), every required attribute there.
func TestOCSFExportMatchesTheSchema(t *testing.T) {
	spec := loadOCSFSpec(t)
	// The check refuses what a validator would.
	for _, c := range []struct {
		ev   map[string]any
		want string
	}{
		{map[string]any{"class_uid": 1007.0, "category_uid": 1.0, "activity_id": 1.0, "type_uid": 100701.0}, "lacks the required metadata"},
		{map[string]any{"message": map[string]any{"base64": "/w=="}}, "event.message is not a string"},
		{map[string]any{"process": map[string]any{"name": "x", "pid": "1"}}, "event.process.pid is not an integer"},
		{map[string]any{"severity_id": 7.0}, "event.severity_id is not one of its enum"},
		{map[string]any{"dst_ip": "192.0.2.1"}, "event.dst_ip is not an attribute of it"},
		{map[string]any{"is_alert": true}, "of the profile security_control, which metadata.profiles does not name"},
	} {
		ev := map[string]any{"class_uid": 1007.0}
		maps.Copy(ev, c.ev)
		if bad := strings.Join(spec.check(ev), "\n"); !strings.Contains(bad, c.want) {
			t.Errorf("the check of %v says %q, want %q", c.ev, bad, c.want)
		}
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
		denial("run_tests", "git", "clone", "a\xffb\x7f"),
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
	// Bytes that are not UTF-8: a string in the attribute, \xNN for each
	// such byte, the exact bytes beside it.
	if !strings.Contains(out.String(), `"dst_endpoint":{"hostname":"evil.example\\xff",`) ||
		!strings.Contains(out.String(), `"cmd_line":"git clone a\\xffb\u007f"`) ||
		!strings.Contains(out.String(), `"bytes":{"dst_endpoint.hostname":"ZXZpbC5leGFtcGxl/w==","http_request.url.hostname":"ZXZpbC5leGFtcGxl/w==","http_request.url.url_string":"ZXZpbC5leGFtcGxl/zo0NDM="}`) ||
		!strings.Contains(out.String(), `"bytes":{"process.cmd_line":"Z2l0IGNsb25lIGH/Yn8="}`) {
		t.Errorf("bytes that are not UTF-8 are not a string with their bytes in unmapped.airlock.bytes")
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

// FuzzOCSF: whatever bytes a record holds, every attribute of its OCSF
// event, as encoding/json reads the exported line, is of its OCSF type (a
// string attribute a JSON string), and every string's exact bytes are had
// back from it and unmapped.airlock.bytes.
func FuzzOCSF(f *testing.F) {
	spec := loadOCSFSpec(f)
	f.Add("pytest", "-v\xff", "/usr/bin/py\x7ftest", "evil.example\xff", "reason \xfe\u202e", "run_tests", "127.0.0.1:40001", "192.0.2.1")
	f.Add("", "", "", "", "", "", "[::1]:1", "fe80::1%eth0")
	f.Fuzz(func(t *testing.T, command, arg, path, host, reason, tool, client, addr string) {
		c := Context{RunID: tool, Tool: tool, Task: tool, Rule: tool, Command: command, Args: []string{arg}, Path: path,
			Host: host, Port: 443, Addresses: []string{addr}, Details: map[string]string{"client": client},
			Alert: reason, TriggerSeqs: []uint64{1}, Count: 1}
		connect, socks := c, c
		connect.Protocol, socks.Protocol = "connect", "socks5"
		for _, ev := range []Event{
			{Kind: KindCommand, Decision: DecisionDeny, Reason: reason, Context: c},
			{Kind: KindEgress, Decision: DecisionAllow, Reason: reason, Context: connect},
			{Kind: KindEgress, Decision: DecisionDeny, Reason: reason, Context: socks},
			{Kind: KindBehavioral, Decision: DecisionAlert, Reason: reason, Context: c},
		} {
			o, _ := OCSF(ev, OCSFSource{ChainID: tool, Host: host})
			b, err := termtext.JSON(o, "")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			if bad := spec.check(got); len(bad) > 0 {
				t.Fatalf("%s:\n  %s", b, strings.Join(bad, "\n  "))
			}
			want := map[string]string{"message": reason, "unmapped.airlock.rule": tool}
			switch ev.Kind {
			case KindCommand:
				want["process.name"], want["process.file.path"] = orDash(command), path
			case KindEgress:
				want["dst_endpoint.hostname"] = orDash(host)
			case KindBehavioral:
				want["finding_info.title"] = reason
			}
			for p, w := range want {
				if g := ocsfExact(t, got, p); w != "" && g != w {
					t.Errorf("%s reads back as %q, want %q", p, g, w)
				}
			}
		}
	})
}

// ocsfExact returns the exact bytes of the string attribute at path in
// ev: unmapped.airlock.bytes's when it holds them, else the string's; ""
// when ev has no such attribute.
func ocsfExact(t *testing.T, ev map[string]any, path string) string {
	t.Helper()
	var v any = ev
	for _, k := range strings.Split(path, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	if v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%s is not a string: %v", path, v)
	}
	u, _ := ev["unmapped"].(map[string]any)
	a, _ := u["airlock"].(map[string]any)
	raw, _ := a["bytes"].(map[string]any)
	b64, ok := raw[path].(string)
	if !ok {
		return s
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || utf8.Valid(b) {
		t.Fatalf("unmapped.airlock.bytes[%q] = %q: not the base64 of bytes that are not UTF-8 (%v)", path, b64, err)
	}
	return string(b)
}
