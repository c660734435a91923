// Command checkproof checks an airlock run's proof with the upstream
// transparency-log packages alone: it imports nothing of airlock, only
// golang.org/x/mod/sumdb/note and tlog and the standard library, so that
// what it accepts does not depend on airlock's own code (docs/audit.md,
// "Proofs").
//
//	go run ./audit/testdata/checkproof PUBKEY RESULT.json
//
// RESULT.json is a run's --result (its "audit" member) or the output of
// "airlock audit prove". It exits 0 and prints one line per record, or
// exits 1 saying why.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type proof struct {
	Checkpoint string `json:"checkpoint"`
	Records    []struct {
		Index int64       `json:"index"`
		Line  string      `json:"line"`
		Proof []tlog.Hash `json:"proof"`
	} `json:"records"`
}

func main() {
	if err := check(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "checkproof:", err)
		os.Exit(1)
	}
}

func check(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: checkproof PUBKEY FILE")
	}
	b, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	var doc struct {
		Audit *proof `json:"audit"`
		proof
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	p := doc.proof
	if doc.Audit != nil {
		p = *doc.Audit
	}
	// The checkpoint: a signed note (C2SP signed-note) whose text is a
	// C2SP tlog-checkpoint: origin, tree size, base64 root hash.
	v, err := note.NewVerifier(args[0])
	if err != nil {
		return err
	}
	n, err := note.Open([]byte(p.Checkpoint), note.VerifierList(v))
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 {
		return fmt.Errorf("checkpoint: %d lines", len(lines))
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return fmt.Errorf("checkpoint size: %w", err)
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return fmt.Errorf("checkpoint root: %w", err)
	}
	if len(p.Records) == 0 {
		return fmt.Errorf("no records")
	}
	// Each record: its leaf is the audit line's bytes (RFC 6962 leaf
	// hash), at index seq-1.
	for _, r := range p.Records {
		var line struct {
			Seq int64 `json:"seq"`
		}
		if err := json.Unmarshal([]byte(r.Line), &line); err != nil || line.Seq != r.Index+1 {
			return fmt.Errorf("record %d: its line's seq is not its index plus one", r.Index)
		}
		if err := tlog.CheckRecord(r.Proof, size, root, r.Index, tlog.RecordHash([]byte(r.Line))); err != nil {
			return fmt.Errorf("record %d: %w", r.Index, err)
		}
		fmt.Printf("ok %s %d/%d\n", lines[0], r.Index, size)
	}
	return nil
}
