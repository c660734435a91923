package sandbox

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/sandbox/findings"
)

// maxInitOutput bounds what is kept of the init's own output.
const maxInitOutput = 4 << 10

// initOutput is the init's own stdout and stderr: a channel of its own,
// never the target's streams (docs/sandbox.md, "Signals to the init"), so
// that nothing the init writes — a Go runtime's fatal error, a panic —
// reaches the sandboxed command's output or the agent reading it. The
// first maxInitOutput bytes are kept for airlock's own report of an init
// that died; the rest is counted and dropped.
type initOutput struct {
	mu   sync.Mutex
	kept []byte
	n    int64
	// eof is closed once the pipe's reading ends (ReadFrom).
	eof     chan struct{}
	eofOnce sync.Once
	endOnce sync.Once
}

func (o *initOutput) eofChan() chan struct{} {
	o.eofOnce.Do(func() { o.eof = make(chan struct{}) })
	return o.eof
}

// ReadFrom is how os/exec's copy of the pipe hands its reading end over
// (io.Copy prefers it to Write): it reads to the end, then marks the
// output complete for drained.
func (o *initOutput) ReadFrom(r io.Reader) (int64, error) {
	defer o.endOnce.Do(func() { close(o.eofChan()) })
	var n int64
	buf := make([]byte, 4096)
	for {
		m, err := r.Read(buf)
		o.Write(buf[:m])
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// drained waits at most d for the init's output to end.
func (o *initOutput) drained(d time.Duration) {
	select {
	case <-o.eofChan():
	case <-time.After(d):
	}
}

// Write keeps what fits and never fails.
func (o *initOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n += int64(len(p))
	if room := maxInitOutput - len(o.kept); room > 0 {
		o.kept = append(o.kept, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// said returns, for a report, the first line the init wrote (clipped and
// quoted unless printable), "" when it wrote nothing.
func (o *initOutput) said() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == 0 {
		return ""
	}
	line, _, _ := bytes.Cut(bytes.TrimSpace(o.kept), []byte("\n"))
	if len(line) > 200 {
		line = append(line[:200:200], "…"...)
	}
	return "; it wrote: " + findings.Quote(string(line))
}
