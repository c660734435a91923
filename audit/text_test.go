package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/decision"
)

// hostile are strings an agent or a sandbox may choose, valid UTF-8 or not.
var hostile = []string{
	"\xff", "a\xffb", "\xfe\xffevil.test", "\xed\xa0\x80", // a lone surrogate, as CESU-8 bytes
	"\xc0\xaf", "\x80", "\xf4\x90\x80\x80", // overlong, lone continuation, past U+10FFFF
	"\x00", "nul\x00in", "\u2028\u2029", "<script>&", "\x1b]0;pwned\a", "\x7f",
	"\ufffd", `\ufffd`, `{"base64":"/w=="}`, "\\", `"`, "é", "🦀",
}

// TestTextEncoding checks the string encoding (docs/audit.md): a valid
// UTF-8 string is written exactly as encoding/json writes it, anything
// else as {"base64":…}; both read back to the same bytes.
func TestTextEncoding(t *testing.T) {
	for _, s := range hostile {
		b, err := json.Marshal(text(s))
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		std, _ := json.Marshal(s)
		isValid := utf8.ValidString(s)
		switch {
		case isValid && !bytes.Equal(b, std):
			t.Errorf("%q: written %s, encoding/json writes %s", s, b, std)
		case !isValid && !bytes.HasPrefix(b, []byte(`{"base64":"`)):
			t.Errorf("%q: written %s, want a base64 object", s, b)
		}
		var back text
		if err := json.Unmarshal(b, &back); err != nil || string(back) != s {
			t.Errorf("%q: read back %q, %v", s, back, err)
		}
	}
	for _, bad := range []string{`{"base64":"@@"}`, `{}`, `{"hex":"ff"}`, `1`, `[]`, `{"base64":1}`} {
		var back text
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s read as %q", bad, back)
		}
	}
}

// TestNotUTF8InEveryField appends events carrying each hostile string in
// every field an agent or a sandbox can choose: the log verifies, and
// every field reads back byte for byte. (On the code before the text
// encoding the log failed to verify, "not in canonical form".)
func TestNotUTF8InEveryField(t *testing.T) {
	l, path := openTest(t)
	var want []Event
	for _, s := range hostile {
		ev := FromDecision(decision.Decision{Gate: decision.GateEgress, Verdict: decision.Deny, Reason: "refused " + s},
			Context{RunID: "run-1", Tool: s, Task: s, Command: s, Path: "/bin/" + s, Args: []string{s, "", s + s},
				Host: s, Port: 443, Protocol: "connect", Addresses: []string{s},
				Details: map[string]string{"requested": s + ":443", "client": s}})
		w, err := l.Append(ev)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want = append(want, w)
	}
	l.Close()
	data, _ := os.ReadFile(path)
	if _, e := verifyBytes(t, data); e != nil {
		t.Fatalf("verify: %v", e)
	}
	var got []Event
	for ev, err := range Events(bytes.NewReader(data)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == KindEgress {
			got = append(got, ev)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("read %d events, wrote %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Reason != want[i].Reason || !reflect.DeepEqual(got[i].Context, want[i].Context) {
			t.Errorf("%q: read back\n%+v\nwrote\n%+v", hostile[i], got[i].Context, want[i].Context)
		}
	}
	// A second writer continues the chain after those lines.
	l2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l2.Append(denial("t", "\xff")); err != nil {
		t.Fatal(err)
	}
	l2.Close()
	data, _ = os.ReadFile(path)
	if _, e := verifyBytes(t, data); e != nil {
		t.Fatalf("verify after a second writer: %v", e)
	}
}

// TestValidLinesUnchanged checks that a line whose strings are all valid
// UTF-8 is spelled as before the text encoding: encoding/json over the
// line's members with plain strings.
func TestValidLinesUnchanged(t *testing.T) {
	_, lines := writeLog(t, 3)
	for _, line := range lines {
		ev, err := ParseLine(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(plainBody{Seq: ev.Seq, TS: ev.TS, Kind: ev.Kind, Decision: ev.Decision,
			Reason: ev.Reason, Context: plainContext(ev.Context), Prev: ev.Prev})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(line, body[:len(body)-1]) {
			t.Errorf("line %s\nis not encoding/json's %s", line, body)
		}
	}
}

// TestNonCanonicalStrings checks that the other spellings of a string are
// refused, each in a line whose hash is right: a lone surrogate escape, a
// raw byte that is not UTF-8, a valid string in the base64 form, and a
// base64 object with another member.
func TestNonCanonicalStrings(t *testing.T) {
	l, path := openTest(t)
	if _, err := l.Append(denial("t", "REPLACE")); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	for _, spelling := range []string{`"\ud800"`, "\"\xff\"", `{"base64":"aGk="}`, `{"base64":"/w==","x":1}`, `{"base64":"/w"}`} {
		line := withHash(t, bytes.Replace(lines[1], []byte(`"REPLACE"`), []byte(spelling), 1))
		if _, err := ParseLine(bytes.TrimSuffix(line, []byte("\n"))); err == nil {
			t.Errorf("%s: accepted", spelling)
		}
	}
}

// TestLegacyLog reads testdata/legacy-not-utf8.jsonl, written by airlock
// before the text encoding: arguments and a host name that were not
// UTF-8 were written as \ufffd. Verify accepts it and names those lines,
// and a writer continues the chain after them: before, the log failed to
// verify and a writer refused to append ("its last two lines are
// damaged"), so every later run exited 125.
func TestLegacyLog(t *testing.T) {
	data, err := os.ReadFile("testdata/legacy-not-utf8.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rep, e := verifyBytes(t, data)
	if e != nil {
		t.Fatalf("verify: %v", e)
	}
	ev, err := ParseLine(bytes.Split(data, []byte("\n"))[1])
	if err != nil || !reflect.DeepEqual(ev.Context.Args, []string{"\ufffd", "ok \ufffd <b>", `a\ufffd`}) {
		t.Errorf("line 2: %q, %v", ev.Context.Args, err)
	}
	path := t.TempDir() + "/audit.jsonl"
	writeFile(t, path, data)
	l, err := Open(path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	w, err := l.Append(denial("t", "\xff"))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if w.Seq != 5 || w.Prev != rep.Head {
		t.Errorf("appended seq %d prev %s; want 5 after %s", w.Seq, w.Prev, rep.Head)
	}
	data, _ = os.ReadFile(path)
	if rep, e := verifyBytes(t, data); e != nil || rep.Events != 5 {
		t.Errorf("after the append: %+v, %v", rep, e)
	}
}

// TestLegacyLogReported checks that Verify names the lines in the legacy
// form, whose bytes that were not UTF-8 are lost.
func TestLegacyLogReported(t *testing.T) {
	data, err := os.ReadFile("testdata/legacy-not-utf8.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rep, e := verifyBytes(t, data)
	if e != nil || rep.Lossy != 3 || !reflect.DeepEqual(rep.LossyLines, []int{2, 3, 4}) {
		t.Errorf("lossy %d, lines %v, %v; want 3 on lines 2-4", rep.Lossy, rep.LossyLines, e)
	}
	_, lines := writeLog(t, 2)
	if rep, e := verifyBytes(t, join(lines)); e != nil || rep.Lossy != 0 || rep.LossyLines != nil {
		t.Errorf("a log of today's lines: %+v, %v", rep, e)
	}
}

// TestLegacyFormIsNarrow checks that only \ufffd for U+FFFD is accepted
// as the legacy spelling: another escape where the canonical form has a
// character is still refused.
func TestLegacyFormIsNarrow(t *testing.T) {
	for _, c := range []struct {
		line, canon string
		ok          bool
	}{
		{`"a\ufffd"`, "\"a\ufffd\"", true},
		{`"a\\ufffd"`, `"a\\ufffd"`, false}, // no escape of U+FFFD in it
		{`"a\u00e9"`, `"aé"`, false},
		{`"\ufffd\ufffd"`, "\"\ufffd\ufffd\"", true},
		{`"\uFFFD"`, "\"\ufffd\"", false},
	} {
		if got := legacyForm([]byte(c.line), []byte(c.canon)); got != c.ok {
			t.Errorf("legacyForm(%s, %s) = %v", c.line, c.canon, got)
		}
	}
}

// TestHostileLongFields checks that an event whose strings are long and
// expensive to encode (control characters, six bytes each; bytes that are
// not UTF-8, base64) is shortened until it fits, and verifies. Before,
// such an event was refused, "over the limit", and so its decision could
// not be recorded.
func TestHostileLongFields(t *testing.T) {
	l, path := openTest(t)
	for _, fill := range []string{"\x01", "\xff", "é", "\x01\xff"} {
		big := strings.Repeat(fill, 4000)
		args := make([]string, 200)
		for i := range args {
			args[i] = big
		}
		ev := FromDecision(decision.Decision{Gate: decision.GateCommand, Verdict: decision.Deny, Reason: big},
			Context{Tool: big, Task: big, Command: big, Path: big, Args: args, Host: big, Rule: big,
				Details: map[string]string{"a": big, "b": big, "c": big}})
		w, err := l.Append(ev)
		if err != nil {
			t.Fatalf("%q: %v", fill, err)
		}
		if !w.Context.Truncated || !strings.HasPrefix(big, w.Context.Command) || len(w.Context.Args) == 0 {
			t.Errorf("%q: truncated %v, command %d bytes, %d args", fill, w.Context.Truncated, len(w.Context.Command), len(w.Context.Args))
		}
	}
	data, _ := os.ReadFile(path)
	if _, e := verifyBytes(t, data); e != nil {
		t.Fatalf("verify: %v", e)
	}
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(line)+1 > MaxEventBytes {
			t.Errorf("a line of %d bytes", len(line))
		}
	}
}

// TestDetailsKeyNotUTF8 checks that a details key that is not valid
// UTF-8 is refused with a clear error: keys are airlock's own names, and
// a JSON member name cannot carry such bytes.
func TestDetailsKeyNotUTF8(t *testing.T) {
	l, path := openTest(t)
	ev := denial("t", "x")
	ev.Context.Details = map[string]string{"\xff": "v"}
	if _, err := l.Append(ev); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("append: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the file changed: %v %v", fi.Size(), err)
	}
}

// TestRoundTripsRefuses checks the writer's last check: a line that does
// not read back as its event is refused.
func TestRoundTripsRefuses(t *testing.T) {
	ev := denial("t", "git")
	ev.Seq, ev.TS, ev.Prev = 2, newTestClock().now(), Genesis
	line, err := encodeLine(&ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrips(&ev, line); err != nil {
		t.Fatalf("a good line: %v", err)
	}
	other := ev
	other.Context.Args = []string{"other"}
	if err := roundTrips(&other, line); err == nil {
		t.Error("a line of another event was accepted")
	}
	if err := roundTrips(&ev, append(bytes.Replace(line[:len(line)-1], []byte(`"git"`), []byte(`"gi\u0074"`), 1), '\n')); err == nil {
		t.Error("a line that does not verify was accepted")
	}
}

// TestEventJSON checks that an Event marshals in its line's form, so that
// what airlock prints as JSON (alerts --json) keeps every byte too.
func TestEventJSON(t *testing.T) {
	ev := denial("t", "\xff", "ok")
	ev.Hash = Genesis
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"command":{"base64":"/w=="}`)) {
		t.Errorf("marshalled %s", b)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || !sameEvent(&ev, &back) {
		t.Errorf("read back %+v, %v", back, err)
	}
	cb, err := json.Marshal(ev.Context)
	var c Context
	if err != nil || json.Unmarshal(cb, &c) != nil || !reflect.DeepEqual(c, ev.Context) {
		t.Errorf("context marshalled %s, read back %+v, %v", cb, c, err)
	}
}

// TestWireContextMatchesContext keeps wireContext in step with Context:
// the same members, in the same order, with the same names and options.
func TestWireContextMatchesContext(t *testing.T) {
	c, w := reflect.TypeFor[Context](), reflect.TypeFor[wireContext]()
	if c.NumField() != w.NumField() {
		t.Fatalf("Context has %d fields, wireContext %d", c.NumField(), w.NumField())
	}
	for i := range c.NumField() {
		cf, wf := c.Field(i), w.Field(i)
		if cf.Name != wf.Name || cf.Tag != wf.Tag {
			t.Errorf("field %d: Context.%s %s, wireContext.%s %s", i, cf.Name, cf.Tag, wf.Name, wf.Tag)
		}
	}
}
