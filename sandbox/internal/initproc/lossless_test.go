package initproc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// fillRaw sets every string of v, however deep, to a distinct string that
// is not UTF-8, and every list to one or two such elements.
func fillRaw(v reflect.Value, n *int) {
	switch v.Kind() {
	case reflect.String:
		*n++
		v.SetString(string([]byte{0xff, byte(*n), 0xfe}))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRaw(v.Field(i), n)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillRaw(v.Index(i), n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillRaw(v.Elem(), n)
	case reflect.Map:
		// Receipt: the init's own words, not acted on.
	}
}

// TestLossless: every string of what the parent sends the init (the
// config, a step, a workspace entry) arrives byte for byte, however many
// members those types grow. TestHole and the probe's canaries are the
// parent's own choices, and the test fills them all the same.
func TestLossless(t *testing.T) {
	for _, v := range []any{&Config{}, &ExecStep{}, &Entry{}, &Message{Exec: &ExecStep{}}} {
		n := 0
		fillRaw(reflect.ValueOf(v).Elem(), &n)
		if m, ok := v.(*Message); ok {
			m.Receipt, m.Stage, m.Error, m.Probes, m.Probe = nil, "", "", nil, nil
			m.Kind = MsgExec
		}
		e, _ := v.(*ExecStep)
		if m, ok := v.(*Message); ok {
			e = m.Exec
		}
		if e != nil {
			for i := range e.Rlimits { // the parent's own names, as Config's
				e.Rlimits[i].Name = "RLIMIT_X"
			}
		}
		if c, ok := v.(*Config); ok {
			c.TestHole, c.Probe = "", nil
			for i := range c.Rlimits {
				c.Rlimits[i].Name = "RLIMIT_X"
			}
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got := reflect.New(reflect.TypeOf(v).Elem())
		if err := json.Unmarshal(b, got.Interface()); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !reflect.DeepEqual(got.Interface(), v) {
			t.Errorf("%T: sent %+v, arrived %+v (as %s)", v, v, got.Interface(), b)
		}
	}
}

// TestLosslessKeepsNames: the lossless encoding writes the same member
// names as the plain one, so UTF-8 configs are unchanged on the wire.
func TestLosslessKeepsNames(t *testing.T) {
	c := Config{Path: "/bin/x", Args: []string{"x"}, Binds: []Bind{{Host: "/h", Inside: "/i"}}, Rlimits: []Rlimit{{Name: "RLIMIT_NOFILE"}}}
	type plain Config
	want, _ := json.Marshal(plain(c))
	got, _ := json.Marshal(c)
	var a, b map[string]any
	json.Unmarshal(want, &a)
	json.Unmarshal(got, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("lossless %s\nplain    %s", got, want)
	}
}

func FuzzEntry(f *testing.F) {
	f.Add("a\xff", "b\xfe", uint32(0o644), int64(3))
	f.Fuzz(func(t *testing.T, name, link string, mode uint32, size int64) {
		e := Entry{Type: EntryFile, Name: name, Link: link, Mode: mode, Size: size}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var got Entry
		if err := json.Unmarshal(b, &got); err != nil || got != e {
			t.Fatalf("%+v arrived as %+v, %v", e, got, err)
		}
	})
}
