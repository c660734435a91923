package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/demo"
	"github.com/airlock-sandbox/airlock/selftest"
)

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestColouredTableAligned: with colour on, every column still starts at
// the same place on every line once the escapes are taken out (tabwriter
// counted their bytes: "yes" and "NO" in two colours, and the header,
// went out of line).
func TestColouredTableAligned(t *testing.T) {
	rep := &demo.Report{Attempts: []demo.Attempt{
		{Step: 1, Attempt: "git clone", Gate: "command", Decision: "deny", Reason: "not allowed", Contained: true},
		{Step: 2, Attempt: "a memory bomb that is long", Gate: "resource", Decision: "kill", Reason: "memory cap", Contained: false},
		{Step: 10, Attempt: "ünïcode", Gate: "egress", Decision: "deny", Reason: "blocked", Contained: true},
	}}
	for _, colour := range []bool{false, true} {
		var b bytes.Buffer
		printDemo(context.Background(), &b, rep, "/nonexistent", colour)
		if got := sgr.MatchString(b.String()); got != colour {
			t.Errorf("colour %v: escapes in the output: %v", colour, got)
		}
		var col int
		for i, line := range strings.Split(sgr.ReplaceAllString(b.String(), ""), "\n")[2:6] {
			c := strings.Index(line, "REASON")
			if i > 0 {
				c = strings.Index(line, []string{"not allowed", "memory cap", "blocked"}[i-1])
			}
			if c < 0 {
				t.Fatalf("colour %v: line %q has no reason", colour, line)
			}
			if n := len([]rune(line[:c])); i == 0 {
				col = n
			} else if n != col {
				t.Errorf("colour %v: the reason column starts at %d on %q, at %d in the header", colour, n, line, col)
			}
		}
	}
}

// TestDemoShowsNoDeletedPath: the audit file the demo deletes on exit is
// neither printed nor reported; a kept one is.
func TestDemoShowsNoDeletedPath(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "airlock-demo-audit-1", "audit.jsonl")
	if err := os.MkdirAll(filepath.Dir(tmp), 0o700); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printDemo(context.Background(), &b, &demo.Report{}, tmp, false)
	if strings.Contains(b.String(), tmp) || !strings.Contains(b.String(), "Audit timeline (deleted on exit: --audit FILE keeps it)") {
		t.Errorf("output:\n%s", b.String())
	}
	b.Reset()
	printDemo(context.Background(), &b, &demo.Report{AuditPath: "kept.jsonl"}, "kept.jsonl", false)
	if !strings.Contains(b.String(), "Audit timeline (kept in kept.jsonl)") {
		t.Errorf("output:\n%s", b.String())
	}
}

// TestSelftestProgress: on a terminal, one line rewritten in place per
// judged attempt, escaped, and cleared at the end; off one, nothing.
func TestSelftestProgress(t *testing.T) {
	var b bytes.Buffer
	if newProgress(&b) != nil {
		t.Fatal("a progress line on a buffer, which is no terminal")
	}
	p := &progress{w: &b}
	show := selftestProgress(p, 2)
	show(selftest.Result{Attempt: "preflight/payload-runs", Family: "preflight", Outcome: selftest.Passed})
	show(selftest.Result{Attempt: "network/direct\x1b[2J", Family: "network", Outcome: selftest.Contained})
	p.done()
	want := "\r\x1b[Kairlock selftest: [0/2] preflight/payload-runs: ok" +
		"\r\x1b[Kairlock selftest: [1/2] network/direct\\x1b[2J: contained\r\x1b[K"
	if b.String() != want {
		t.Errorf("progress %q\nwant     %q", b.String(), want)
	}
	if selftestProgress(nil, 2) != nil {
		t.Error("a progress callback with no terminal")
	}
	if n := batterySize(nil); n < 100 {
		t.Errorf("the battery has %d attempts", n)
	}
}
