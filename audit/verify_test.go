package audit

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestVerifyDetectsTampering tampers with a good log in every way the
// issue names and checks that Verify names the right line and cause.
func TestVerifyDetectsTampering(t *testing.T) {
	_, lines := writeLog(t, 8) // lines 1..9: chain_started, then 8 denials
	_, other := writeLog(t, 8) // the same events in another log
	if _, verr := verifyBytes(t, join(lines)); verr != nil {
		t.Fatalf("the untampered log fails: %v", verr)
	}
	line := func(n int) []byte { return bytes.Clone(lines[n-1]) }
	// forged is a line that chains correctly after line n-1 (its prev is
	// that line's hash, its seq is next) with a recomputed hash.
	forged := func(n int) []byte {
		prev, err := ParseLine(bytes.TrimSuffix(lines[n-2], []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		ev := denial("run_tests", "pytest", "-v")
		ev.Decision = DecisionAllow
		ev.Seq, ev.TS, ev.Prev = prev.Seq+1, prev.TS, prev.Hash
		b, err := encodeLine(&ev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	edit := func(n int, old, new string) [][]byte {
		out := slices.Clone(lines)
		if !bytes.Contains(out[n-1], []byte(old)) {
			t.Fatalf("line %d has no %q", n, old)
		}
		out[n-1] = bytes.Replace(line(n), []byte(old), []byte(new), 1)
		return out
	}
	respaced := bytes.Replace(line(4), []byte(`,"kind"`), []byte(`, "kind"`), 1)
	respaced = withHash(t, respaced)

	for _, tc := range []struct {
		name   string
		log    [][]byte
		line   int
		reason string
	}{
		{"edit a reason", edit(4, "allowlist", "allow-list"), 4, reasonBadHash},
		{"flip a decision", edit(5, `"decision":"deny"`, `"decision":"allow"`), 5, reasonBadHash},
		{"edit the hash", edit(5, `"hash":"`, `"hash":"0`), 5, reasonNoHash},
		{"delete a line", slices.Delete(slices.Clone(lines), 3, 4), 4, "seq jumps from 3 to 5"},
		{"swap two lines", swap(lines, 4, 5), 4, "seq jumps from 3 to 5"},
		{"duplicate a line", slices.Insert(slices.Clone(lines), 4, line(4)), 5, "a copy of line 4"},
		{"insert a forged line with a recomputed hash", slices.Insert(slices.Clone(lines), 4, forged(5)), 6,
			"seq 5 repeats or goes back (expected 6)"},
		{"replace a line by a forged one", replace(lines, 5, forged(5)), 6,
			"prev does not match the hash of line 5"},
		{"truncate in the middle (whole lines)", slices.Delete(slices.Clone(lines), 3, 6), 4, "seq jumps from 3 to 7"},
		{"truncate in the middle (mid-line)", cutBytes(lines, 4, 6), 4, reasonBadHash},
		{"torn final line", append(slices.Clone(lines[:8]), lines[8][:30]), 9, "final line has no newline (30 bytes)"},
		{"remove the first line", slices.Clone(lines[1:]), 1, "the log starts at seq 2, not 1"},
		{"splice another log's end on", append(slices.Clone(lines[:5]), other[5:]...), 6,
			"prev does not match the hash of line 5"},
		{"append another log's line", append(slices.Clone(lines), other[3]), 10, "seq 4 repeats or goes back"},
		{"not JSON", replace(lines, 3, []byte("hello\n")), 3, reasonNoHash},
		{"an empty line", slices.Insert(slices.Clone(lines), 2, []byte("\n")), 3, reasonNoHash},
		{"CRLF line ends", [][]byte{bytes.Replace(line(1), []byte("\n"), []byte("\r\n"), 1)}, 1, reasonNoHash},
		{"re-spaced JSON with its hash recomputed", replace(lines, 4, respaced), 4, reasonCanonical},
		{"unknown member with its hash recomputed", replace(lines, 4,
			withHash(t, bytes.Replace(line(4), []byte(`{"seq"`), []byte(`{"x":1,"seq"`), 1))), 4, reasonUnknown},
		{"duplicate member with its hash recomputed", replace(lines, 4,
			withHash(t, bytes.Replace(line(4), []byte(`,"reason"`), []byte(`,"decision":"allow","reason"`), 1))), 4,
			reasonCanonical},
		{"wrong type with its hash recomputed", replace(lines, 4,
			withHash(t, bytes.Replace(line(4), []byte(`{"seq":4`), []byte(`{"seq":"4"`), 1))), 4, reasonWrongType},
		{"unknown decision with its hash recomputed", replace(lines, 4,
			withHash(t, bytes.Replace(line(4), []byte(`"deny"`), []byte(`"permit"`), 1))), 4, `unknown decision "permit"`},
		{"forged repair record", slices.Insert(slices.Clone(lines), 4, forgedRepair(t, lines[3])), 5,
			"a repair record with no damaged line before it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, verr := verifyBytes(t, join(tc.log))
			if verr == nil {
				t.Fatalf("tampering not detected (report %+v)", rep)
			}
			if verr.Line != tc.line || !strings.Contains(verr.Reason, tc.reason) {
				t.Errorf("got %v\nwant line %d: …%s…", verr, tc.line, tc.reason)
			}
		})
	}
}

// TestVerifyHeadDetectsCutEnd shows what a chain alone cannot see, and
// the anchor that can.
func TestVerifyHeadDetectsCutEnd(t *testing.T) {
	_, lines := writeLog(t, 8)
	head, err := ParseLine(bytes.TrimSuffix(lines[6], []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	cut := join(lines[:5])
	if _, verr := verifyBytes(t, cut); verr != nil {
		t.Fatalf("a log cut at a line end should verify on its own (a chain cannot see it): %v", verr)
	}
	if _, err := VerifyWith(bytes.NewReader(cut), VerifyOptions{Head: head.Hash}); err == nil ||
		!strings.Contains(err.Error(), "holds no line with the given head hash") {
		t.Errorf("VerifyWith(Head) of a cut log = %v, want the missing head", err)
	}
	rep, err := VerifyWith(bytes.NewReader(join(lines)), VerifyOptions{Head: head.Hash})
	if err != nil || rep.Events != 9 {
		t.Errorf("VerifyWith(Head) of the whole log = %+v, %v", rep, err)
	}
	if _, err := VerifyWith(bytes.NewReader(cut), VerifyOptions{Head: "XYZ"}); err == nil {
		t.Error("VerifyWith accepted a malformed head")
	}
}

func TestVerifyRefusesHugeLineWithoutReadingIt(t *testing.T) {
	_, lines := writeLog(t, 2)
	r := ioMulti(join(lines), &endless{})
	_, err := Verify(r)
	if e, ok := err.(*Error); !ok || e.Line != 4 || e.Reason != reasonTooLong {
		t.Fatalf("Verify = %v, want line 4: %s", err, reasonTooLong)
	}
}

func TestVerifyEmptyLog(t *testing.T) {
	rep, verr := verifyBytes(t, nil)
	if verr != nil || rep.Events != 0 {
		t.Fatalf("empty log: %+v %v", rep, verr)
	}
}

func TestRepairRecordMustMatchTheDamagedBytes(t *testing.T) {
	path, lines := writeLog(t, 2)
	torn := append(join(lines), "{\"seq\":4"...)
	writeFile(t, path, torn)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(denial("t", "x")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	good := readLines(t, path)
	if _, verr := verifyBytes(t, join(good)); verr != nil {
		t.Fatal(verr)
	}
	// Change the damaged line: its repair record no longer describes it.
	bad := replace(good, 4, []byte("{\"seq\":5\n"))
	if _, verr := verifyBytes(t, join(bad)); verr == nil || verr.Line != 4 || !strings.Contains(verr.Reason, "describes other bytes") {
		t.Errorf("Verify = %v, want line 4: repair describes other bytes", verr)
	}
}
