package termtext

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/rawtext"
)

func TestJSON(t *testing.T) {
	in := "del \x7f esc \x1b c1 \u009b bidi \u202e tag \U000e0041 bad \xff nbsp \u00a0 é 😀 <&>"
	b, err := JSON(map[string]string{"s": in}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"s":"del \u007f esc \u001b c1 \u009b bidi \u202e tag \udb40\udc41 bad \ufffd nbsp \u00a0 é 😀 <&>"}` + "\n"
	if string(b) != want {
		t.Errorf("JSON wrote\n%s want\n%s", b, want)
	}
	if b, _ := JSON([]int{1}, "  "); string(b) != "[\n  1\n]\n" {
		t.Errorf("indented: %q", b)
	}
	// Through a Writer: past its escapes, after what it kept back.
	var out bytes.Buffer
	w := NewWriter(&out)
	if _, err := w.Write([]byte("caf\xc3")); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(w, "\x7f", ""); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != `caf\xc3"\u007f"`+"\n" {
		t.Errorf("WriteJSON through a Writer: %q", got)
	}
}

// FuzzJSON: whatever bytes the sandbox chose (its output, a file name, an
// argument, a map key), what JSON writes is valid JSON that encoding/json
// reads back as it reads its own encoding (the rawtext form byte for
// byte), and nothing in it can drive a terminal.
func FuzzJSON(f *testing.F) {
	f.Add("a\x7fb", "name\x7f\xff", "\u009b\u202e", "\U000e0041\x1b]0;x\a", true)
	f.Add("", "", "", "", false)
	f.Fuzz(func(t *testing.T, output, name, arg, key string, indent bool) {
		type doc struct {
			Text string            `json:"text"`
			Name rawtext.String    `json:"name"`
			Argv rawtext.Strings   `json:"argv"`
			Map  map[string]string `json:"map"`
		}
		v := doc{output, rawtext.String(name), rawtext.Strings{arg, name}, map[string]string{key: output}}
		ind := ""
		if indent {
			ind = "\t"
		}
		b, err := JSON(v, ind)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) {
			t.Fatalf("not JSON: %q", b)
		}
		var got, own doc
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%v: %q", err, b)
		}
		plain, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(plain, &own); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, own) {
			t.Fatalf("read back %+v, encoding/json's own reads %+v", got, own)
		}
		if string(got.Name) != name || got.Argv[0] != arg {
			t.Fatalf("rawtext lost bytes: %q %q", got.Name, got.Argv)
		}
		assertSafe(t, string(b), true)
		var through strings.Builder
		w := NewWriter(&through)
		if _, err := w.Write(b); err != nil || w.Flush() != nil || through.String() != string(b) {
			t.Fatalf("a Writer would change it: %q", through.String())
		}
	})
}
