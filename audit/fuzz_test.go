package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

// FuzzParseLine checks that ParseLine never panics, and that a line it
// accepts is exactly what the writer would write for that event (one
// spelling per event), or that line in the legacy form.
func FuzzParseLine(f *testing.F) {
	_, lines := writeLog(f, 3)
	legacy, err := os.ReadFile("testdata/legacy-not-utf8.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range append(lines, bytes.SplitAfter(legacy, []byte("\n"))...) {
		f.Add(bytes.TrimSuffix(l, []byte("\n")))
	}
	f.Add([]byte(`{"seq":1}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, isLegacy, err := parseLine(line)
		if err != nil {
			return
		}
		again, err := encodeLine(&ev)
		if err != nil {
			t.Fatalf("accepted line does not re-encode: %v", err)
		}
		if canon := again[:len(again)-1-hashTailLen]; isLegacy != !bytes.Equal(canon, line[:len(line)-hashTailLen]) ||
			isLegacy && !legacyForm(line[:len(line)-hashTailLen], canon) {
			t.Fatalf("accepted line is not canonical (legacy %v):\n%s\n%s", isLegacy, line, again)
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

// FuzzAppendVerify puts arbitrary bytes in every field an agent, a
// sandbox or a proxy client can choose (tool, task, command, arguments,
// host name, the text a reason quotes, a requested address), appends the
// event, a lazy one after it and a second writer's, and checks that the
// log verifies and that every field reads back as the exact bytes given
// (a prefix of them when the writer shortened a long event).
func FuzzAppendVerify(f *testing.F) {
	orig := syncData
	syncData = func(*os.File) error { return nil }
	f.Cleanup(func() { syncData = orig })
	f.Add([]byte("run_tests"), []byte("git"), []byte("clone"), []byte("https://x.example/r"), []byte("x.example"), []byte(`"git"`), []byte("x.example:443"))
	f.Add([]byte("t\xff"), []byte("/bin/echo"), []byte("\xff"), []byte("\xed\xa0\x80"), []byte("\xfe\xffevil.test"), []byte("\x00\u2028"), []byte("\xfe\xff:443"))
	f.Add([]byte{}, []byte("\ufffd"), []byte(`\ufffd`), []byte(`{"base64":"/w=="}`), []byte("<&>"), []byte("\x1b]0;x\a"), []byte{0x80})
	f.Fuzz(func(t *testing.T, tool, command, arg0, arg1, host, quoted, requested []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "audit.jsonl")
		l, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx := Context{Tool: string(tool), Task: string(tool), Command: string(command),
			Args: []string{string(arg0), string(arg1)}, Host: string(host), Addresses: []string{string(requested)},
			Details: map[string]string{"requested": string(requested)}}
		reason := "refused " + string(quoted)
		ev := FromDecision(decision.Decision{Gate: decision.GateEgress, Verdict: decision.Deny, Reason: reason}, ctx)
		if _, err := l.Append(ev); err != nil {
			t.Fatalf("append: %v", err)
		}
		closed := Event{Kind: KindEgress, Decision: DecisionInfo, Reason: reason, Context: ctx}
		if _, _, err := l.AppendLazy(closed); err != nil {
			t.Fatalf("append lazy: %v", err)
		}
		l.Close()
		l2, err := Open(path)
		if err != nil {
			t.Fatalf("a second writer: %v", err)
		}
		if _, err := l2.Append(ev); err != nil {
			t.Fatalf("a second writer's append: %v", err)
		}
		l2.Close()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(bytes.NewReader(data)); err != nil {
			t.Fatalf("verify: %v", err)
		}
		n := 0
		for got, err := range Events(bytes.NewReader(data)) {
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if got.Kind != KindEgress {
				continue
			}
			n++
			checkField(t, "reason", got.Context.Truncated, got.Reason, reason)
			c := got.Context
			for _, f := range []struct{ name, got, want string }{
				{"tool", c.Tool, ctx.Tool}, {"task", c.Task, ctx.Task}, {"command", c.Command, ctx.Command},
				{"host", c.Host, ctx.Host}, {"details", c.Details["requested"], ctx.Details["requested"]},
			} {
				checkField(t, f.name, c.Truncated, f.got, f.want)
			}
			if len(c.Args) != 2 || len(c.Addresses) != 1 {
				t.Fatalf("args %q, addresses %q", c.Args, c.Addresses)
			}
			checkField(t, "arg 0", c.Truncated, c.Args[0], ctx.Args[0])
			checkField(t, "arg 1", c.Truncated, c.Args[1], ctx.Args[1])
			checkField(t, "address", c.Truncated, c.Addresses[0], ctx.Addresses[0])
		}
		if n != 3 {
			t.Fatalf("read %d events, wrote 3", n)
		}
	})
}

// checkField fails unless got is want, or a prefix of it when the event
// was shortened.
func checkField(t *testing.T, name string, truncated bool, got, want string) {
	t.Helper()
	if got != want && !(truncated && strings.HasPrefix(want, got)) {
		t.Fatalf("%s: read back %q, wrote %q", name, got, want)
	}
}
