package audit

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

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
			Args: []string{string(arg0), string(arg1)}, Env: []string{string(quoted)}, Host: string(host), Addresses: []string{string(requested)},
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
			if c.ArgvSHA256 != nulHash(append([]string{ctx.Command}, ctx.Args...)) || c.EnvSHA256 != nulHash(ctx.Env) {
				t.Fatalf("the argv or env hash is not that of the whole")
			}
			whole := map[string]string{"command": ctx.Command, "args.0": ctx.Args[0], "args.1": ctx.Args[1], "env.0": ctx.Env[0]}
			kept := map[string]string{"command": c.Command, "args.0": c.Args[0], "args.1": c.Args[1]}
			if len(c.Env) > 0 {
				kept["env.0"] = c.Env[0]
			}
			for _, tl := range c.Tails {
				w, ok := whole[tl.Field]
				if !ok || tl.Bytes != len(w) || !strings.HasSuffix(w, tl.Tail) || !strings.HasPrefix(w, kept[tl.Field]) {
					t.Fatalf("tail %+v does not end %s", tl, tl.Field)
				}
			}
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

// FuzzParseCheckpoint feeds arbitrary notes to the checkpoint parser: it
// must never panic, and what it accepts was signed by the key.
func FuzzParseCheckpoint(f *testing.F) {
	s := testSigner(f)
	_, _, cp := signedLog(f, s, 2)
	f.Add([]byte(cp.Note))
	f.Add([]byte("airlock/x/00\n1\nAAAA\n\n— airlock/x AAAA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseCheckpoint(b, s.PublicKey())
		if err == nil && (got.Size < 0 || !strings.HasPrefix(string(b), got.Origin+"\n")) {
			t.Fatalf("accepted %q as %+v", b, got)
		}
	})
}

// FuzzVerifyRunProof feeds arbitrary proofs (as JSON) to the offline
// checker and arbitrary bytes to the kept-checkpoint reader: neither may
// panic, and a proof it accepts holds only intact lines.
func FuzzVerifyRunProof(f *testing.F) {
	s := testSigner(f)
	l, _, _ := signedLog(f, s, 3)
	w, _ := l.Append(denial("a", "b"))
	cp, _ := l.Checkpoint()
	recs, _ := l.Prove(cp, []Event{w})
	good, _ := json.Marshal(RunProof{Checkpoint: cp.Note, Records: recs})
	f.Add(good)
	f.Add([]byte(`{"checkpoint":"x","records":[{"index":-1,"line":"","proof":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p RunProof
		if json.Unmarshal(b, &p) != nil {
			return
		}
		if _, evs, err := VerifyRunProof(p, s.PublicKey()); err == nil {
			for i, ev := range evs {
				if _, err := ParseLine([]byte(p.Records[i].Line)); err != nil || ev.Seq == 0 {
					t.Fatalf("accepted a record that is not an intact line")
				}
			}
		}
		parseSlot(append(b, make([]byte, keptSlot)...)[:keptSlot])
	})
}

// FuzzParseSigner: a key file's text is accepted by parseSigner and its
// Check exactly when golang.org/x/mod/sumdb/note takes it as an Ed25519
// signer key, and then the public key verifies what it signs.
func FuzzParseSigner(f *testing.F) {
	skey, _, err := note.GenerateKey(rand.Reader, "airlock/fuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(skey)
	f.Add("PRIVATE+KEY+airlock/x+00000000+AQ==")
	f.Add("PRIVATE+KEY+a+b+c+d")
	f.Fuzz(func(t *testing.T, k string) {
		_, upstream := note.NewSigner(k)
		s, err := parseSigner(k)
		if err == nil {
			err = s.Check()
		}
		if (err == nil) != (upstream == nil) {
			t.Fatalf("key %q: airlock %v, note %v", k, err, upstream)
		}
		if err != nil {
			return
		}
		v, err := note.NewVerifier(s.PublicKey())
		if err != nil {
			t.Fatalf("public key %q: %v", s.PublicKey(), err)
		}
		k2, _ := s.keys()
		msg, err := note.Sign(&note.Note{Text: "x\n"}, k2.signer)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := note.Open(msg, note.VerifierList(v)); err != nil {
			t.Fatalf("its own note does not verify: %v", err)
		}
	})
}
