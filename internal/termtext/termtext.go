// Package termtext makes text that an agent or the contained code chose
// safe to show on a terminal: control characters (C0, DEL and C1, the
// 8-bit CSI 0x9b among them), invalid UTF-8, and every other character
// that does not print — the bidirectional overrides that can disguise
// text (CVE-2021-42574), zero-width and tag characters — are written as
// Go escapes (\x1b, \u009b, \u202e, \U000e0041), so that no byte of it
// can move the cursor, set a window title or hide what the reader sees.
//
// Every line airlock prints for people goes through Escape or a Writer,
// and so does a child's output when it goes to a terminal; to a pipe or a
// file the child's output is data, passed byte for byte. JSON goes
// through neither (a Go escape such as \x7f is not JSON): JSON and
// WriteJSON encode it with JSON's own \u escapes for every character
// that does not print, which is both valid JSON and safe on a terminal.
package termtext

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every control character (new lines and tabs
// too), invalid UTF-8 byte and bidirectional control escaped: for a value
// shown on one line.
func Escape(s string) string { return Clip(s, -1) }

// Clip is Escape that also cuts s to at most n runes, ending it with an
// ellipsis; n < 0 means no limit.
func Clip(s string, n int) string {
	if n < 0 && plain(s, false) {
		return s
	}
	var b strings.Builder
	escape(&b, s, n, false)
	return b.String()
}

// Writer escapes what is written through it as Escape does, except new
// lines and tabs, which pass: for whole messages of several lines, and
// for a child's output on its way to a terminal. A UTF-8 sequence cut
// between two writes is kept back until the next one completes it (Flush
// writes what is left, escaped), so that text written in pieces reads as
// it was meant. It is not for JSON, which it would break (DEL becomes
// \x7f): WriteJSON writes past it. It is safe for concurrent use.
type Writer struct {
	// W is where the escaped text goes: the terminal, or its pipe.
	W io.Writer

	mu      sync.Mutex
	pending []byte // the start of a UTF-8 sequence the next Write may complete
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{W: w} }

// Write escapes p and writes it; it reports len(p) when every escaped
// byte was written.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data := p
	if len(w.pending) > 0 {
		data = append(w.pending, p...)
		w.pending = nil
	}
	cut := completeUpTo(data)
	w.pending = append([]byte(nil), data[cut:]...)
	if err := w.write(data[:cut]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes, escaped, what a Write kept back: the start of a UTF-8
// sequence that no later write completed.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pending
	w.pending = nil
	return w.write(p)
}

func (w *Writer) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	s := string(p)
	if !plain(s, true) {
		var b strings.Builder
		escape(&b, s, -1, true)
		s = b.String()
	}
	_, err := io.WriteString(w.W, s)
	return err
}

// completeUpTo returns where the incomplete UTF-8 sequence at the end of
// p starts, or len(p) when there is none.
func completeUpTo(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if p[i] >= 0xc0 && !utf8.FullRune(p[i:]) {
				return i
			}
			break
		}
	}
	return len(p)
}

// Raw returns the writer under w when w is a Writer, else w itself: for
// the child's own output, passed byte for byte.
func Raw(w io.Writer) io.Writer {
	if t, ok := w.(*Writer); ok {
		return t.W
	}
	return w
}

// plain reports whether s needs no escaping.
func plain(s string, lines bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			if lines && (c == '\n' || c == '\t') {
				continue
			}
			return false
		}
	}
	return true
}

func escape(b *strings.Builder, s string, n int, lines bool) {
	count := 0
	for i := 0; i < len(s); {
		if count == n {
			b.WriteString("…")
			return
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case !unicode.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
		count++
	}
}
