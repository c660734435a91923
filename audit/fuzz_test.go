package audit

import (
	"bytes"
	"testing"
)

// FuzzParseLine checks that ParseLine never panics, and that a line it
// accepts is exactly what the writer would write for that event: one
// spelling per event.
func FuzzParseLine(f *testing.F) {
	_, lines := writeLog(f, 3)
	for _, l := range lines {
		f.Add(bytes.TrimSuffix(l, []byte("\n")))
	}
	f.Add([]byte(`{"seq":1}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := ParseLine(line)
		if err != nil {
			return
		}
		again, err := encodeLine(&ev)
		if err != nil {
			t.Fatalf("accepted line does not re-encode: %v", err)
		}
		if !bytes.Equal(again, append(bytes.Clone(line), '\n')) {
			t.Fatalf("accepted line is not canonical:\n%s\n%s", line, again)
		}
	})
}

// FuzzVerify checks that Verify never panics and that what it accepts is
// consistent: every line counted, every event in order.
func FuzzVerify(f *testing.F) {
	_, lines := writeLog(f, 4)
	good := join(lines)
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(append(bytes.Clone(good), "x\n"...))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Verify(bytes.NewReader(data))
		if err != nil {
			return
		}
		if rep.Lines != bytes.Count(data, []byte{'\n'}) || rep.Events+len(rep.Repairs) != rep.Lines ||
			(rep.Events > 0 && rep.HeadSeq != uint64(rep.Events)) {
			t.Fatalf("inconsistent report %+v for %d lines", rep, bytes.Count(data, []byte{'\n'}))
		}
	})
}

// FuzzTamper changes, deletes or inserts one byte anywhere in a good log:
// Verify must always notice.
func FuzzTamper(f *testing.F) {
	_, lines := writeLog(f, 5)
	good := join(lines)
	f.Add(uint32(10), byte('x'), uint8(0))
	f.Add(uint32(len(good)-1), byte('x'), uint8(0))
	f.Add(uint32(len(lines[0])-1), byte(0), uint8(1))
	f.Add(uint32(len(lines[0])), byte('\n'), uint8(2))
	f.Fuzz(func(t *testing.T, pos uint32, b byte, op uint8) {
		p := int(pos % uint32(len(good)))
		bad := bytes.Clone(good)
		switch op % 3 {
		case 0:
			bad[p] = b
		case 1:
			bad = append(bad[:p], bad[p+1:]...)
		case 2:
			bad = append(bad[:p], append([]byte{b}, bad[p:]...)...)
		}
		if bytes.Equal(bad, good) {
			return
		}
		if _, err := Verify(bytes.NewReader(bad)); err == nil {
			t.Fatalf("op %d at %d with %q went unnoticed", op%3, p, b)
		}
	})
}
