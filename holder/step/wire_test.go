package step

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// mirror is a Request as encoding/json writes a struct of the same
// fields, its strings as []byte (base64).
type mirror struct {
	Session        []byte        `json:"session"`
	Tool           []byte        `json:"tool"`
	Argv           [][]byte      `json:"argv"`
	Env            [][]byte      `json:"env"`
	Cwd            []byte        `json:"cwd"`
	Timeout        time.Duration `json:"timeout"`
	Approval       []byte        `json:"approval"`
	Grace          time.Duration `json:"grace"`
	JSON           bool          `json:"json"`
	Result         []byte        `json:"result"`
	Quiet          bool          `json:"quiet"`
	StdoutTerminal bool          `json:"stdoutTerminal"`
	StderrTerminal bool          `json:"stderrTerminal"`
}

func bytesOf(ss []string) [][]byte {
	if ss == nil {
		return nil
	}
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func mirrorOf(r Request) mirror {
	return mirror{[]byte(r.Session), []byte(r.Tool), bytesOf(r.Argv), bytesOf(r.Env), []byte(r.Cwd), r.Timeout, []byte(r.Approval),
		r.Grace, r.JSON, []byte(r.Result), r.Quiet, r.StdoutTerminal, r.StderrTerminal}
}

// checkWire fails t unless r is written exactly as encoding/json writes
// its mirror, and each reads the other's writing back as it was.
func checkWire(t *testing.T, r Request) {
	t.Helper()
	got, _ := r.MarshalJSON()
	want, err := json.Marshal(mirrorOf(r))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%+v written\n %s\nencoding/json writes\n %s", r, got, want)
	}
	var back Request
	if err := back.UnmarshalJSON(want); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("%s read as %+v, %v; want %+v", want, back, err, r)
	}
	var m mirror
	if err := json.Unmarshal(got, &m); err != nil || !reflect.DeepEqual(m, mirrorOf(r)) {
		t.Fatalf("encoding/json reads %s as %+v, %v", got, m, err)
	}
}

// TestWire: a Request is JSON as encoding/json writes and reads it, every
// string byte for byte, UTF-8 or not.
func TestWire(t *testing.T) {
	checkWire(t, Request{})
	checkWire(t, Request{Session: "ses-1", Tool: "t", Argv: []string{"printf", "\xff\xfe", "", "<&>\"\\\n"}, Env: []string{},
		Cwd: "caf\u00e9", Timeout: -1, Approval: "a", Grace: 1 << 62, JSON: true, Result: "/r\x00", Quiet: true, StdoutTerminal: true})
	for _, a := range []Answer{{}, {Accepted: true, ExitCode: -3}, {Error: "holder: \xff \"x\""}} {
		b, _ := json.Marshal(a)
		var back Answer
		if err := json.Unmarshal(b, &back); err != nil || back != a {
			t.Errorf("%+v: %s read as %+v, %v", a, b, back, err)
		}
	}
}

// TestWireRefuses: what is not a message of its own is an error, never
// a message: unknown and repeated fields, wrong types, bad base64, space,
// trailing bytes, an older holder's answer.
func TestWireRefuses(t *testing.T) {
	ok, _ := Request{Argv: []string{"a"}}.MarshalJSON()
	for _, in := range []string{
		"", "{", "[]", `{"x":true}`, `{"tool":"dA==","tool":"dA=="}`, `{"tool":true}`, `{"tool":"t"}`, `{"tool":"dA="}`,
		`{"argv":["YQ==",]}`, `{"argv":"YQ=="}`, `{"json":1}`, `{"timeout":"1"}`, `{"timeout":1.5}`, `{"timeout":+1}`,
		`{ "tool":"dA=="}`, `{"tool":"dA=="} `, `{"tool":"d\nA=="}`, `{"tool":"\u0064A=="}`, `{,"tool":"dA=="}`, string(ok) + "{}",
		`{"error":"holder: unknown request \"step\""}`,
	} {
		var r Request
		if err := r.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s read as %+v", in, r)
		}
	}
}

// FuzzWire: whatever a Request holds, it is written as encoding/json
// writes it and read back whole.
func FuzzWire(f *testing.F) {
	f.Add("ses", "t", "printf\x00\xff", "A=1", "/r", int64(5), true)
	f.Add("", "", "", "", "", int64(-1), false)
	f.Fuzz(func(t *testing.T, session, tool, argv, env, result string, d int64, b bool) {
		checkWire(t, Request{Session: session, Tool: tool, Argv: strings.Split(argv, "\x00"), Env: strings.Split(env, "\x00"),
			Timeout: time.Duration(d), Grace: time.Duration(-d), Result: result, JSON: b, Quiet: !b, StderrTerminal: b})
	})
}

// FuzzDecode: any bytes are read as a Request or refused, never a panic;
// what is read is written back as it came.
func FuzzDecode(f *testing.F) {
	ok, _ := Request{Session: "s", Argv: []string{"a", "\xff"}, Timeout: 3}.MarshalJSON()
	f.Add(ok)
	f.Add([]byte(`{"argv":null,"json":true}`))
	f.Add([]byte(`{"argv":[],"timeout":-0}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var r Request
		if r.UnmarshalJSON(in) != nil {
			return
		}
		var again Request
		out, _ := r.MarshalJSON()
		if err := again.UnmarshalJSON(out); err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("%s read as %+v, written %s, read back as %+v, %v", in, r, out, again, err)
		}
	})
}
