package linelog

import (
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// gate is a writer that blocks until opened, like a pipe nobody reads.
type gate struct {
	open chan struct{}
	mu   sync.Mutex
	sb   strings.Builder
}

func (g *gate) Write(b []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sb.Write(b)
}

func (g *gate) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sb.String()
}

// TestNeverBlocks: with a writer that does not take anything, lines are
// queued up to the bound and the rest counted, without the caller ever
// waiting; once the writer takes again, the queue and the count come out.
func TestNeverBlocks(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	l := New(g)
	const n = 3 * MaxLines
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			l.Printf("line %d", i)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Printf blocked on a writer that does not take")
	}
	// At most the queue and the batch being written are held.
	if d := l.Dropped(); d < n-2*MaxLines {
		t.Fatalf("dropped %d of %d lines, want at least %d", d, n, n-2*MaxLines)
	}
	close(g.open)
	l.Close(10 * time.Second)
	out := g.String()
	if !strings.Contains(out, "line 0\n") || !strings.Contains(out, " log lines dropped: stderr was not read fast enough") {
		t.Errorf("output after draining:\n%s", out[max(0, len(out)-300):])
	}
}

// TestCloseGivesUp: Close returns after its timeout when the writer never
// takes anything.
func TestCloseGivesUp(t *testing.T) {
	l := New(&gate{open: make(chan struct{})})
	l.Printf("stuck")
	start := time.Now()
	l.Close(100 * time.Millisecond)
	if time.Since(start) > 10*time.Second {
		t.Fatal("Close waited for a writer that never takes")
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                 "plain\n",
		"plain\n":               "plain\n",
		"tab\there":             `tab\there` + "\n",
		"\x1b]0;pwned\a":        `\x1b]0;pwned\a` + "\n",
		"two\nlines\n":          `two\nlines` + "\n",
		"bad \xff\xfe utf8":     `bad \xff\xfe utf8` + "\n",
		"del \x7f":              `del \x7f` + "\n",
		"c1 \u009b2J":           `c1 \u009b2J` + "\n",
		"bidi \u202eevil":       `bidi \u202eevil` + "\n",
		"bücher.de ok":          "bücher.de ok\n",
		"emoji 🙂 ok":            "emoji 🙂 ok\n",
		"carriage\rreturn":      `carriage\rreturn` + "\n",
		"tag \U000E0041 hidden": `tag \U000e0041 hidden` + "\n",
	} {
		if got := string(Escape([]byte(in))); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[2J", "\xff", "a\nb", "\u202e", "\t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := Escape(b)
		if !utf8.Valid(out) || len(out) == 0 || out[len(out)-1] != '\n' {
			t.Fatalf("Escape(%q) = %q: not one valid line", b, out)
		}
		for _, r := range string(out[:len(out)-1]) {
			if r != '\t' && !unicode.IsPrint(r) {
				t.Fatalf("Escape(%q) = %q: holds %U", b, out, r)
			}
		}
	})
}
