package enforcer

import (
	"strings"
	"sync"
)

// MaxCapture is how much of each stream a Capture keeps by default.
const MaxCapture = 1 << 20

// Capture keeps the first bytes written to it, up to a limit, and counts
// the rest: a child's output captured into a Result (--json), bounded so
// that a chatty or hostile command cannot grow airlock's memory. It is
// safe for concurrent use.
type Capture struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	n     int64
}

// NewCapture returns a Capture that keeps at most limit bytes
// (MaxCapture when limit <= 0).
func NewCapture(limit int) *Capture {
	if limit <= 0 {
		limit = MaxCapture
	}
	return &Capture{limit: limit}
}

// Write keeps what fits and counts everything; it never fails, so the
// child is never stopped by a full capture.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(len(p))
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Output is what was captured so far, as a Result holds it.
func (c *Capture) Output() *Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &Output{Text: strings.ToValidUTF8(string(c.buf), "\uFFFD"), Bytes: c.n, Truncated: c.n > int64(len(c.buf))}
}
