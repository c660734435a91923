package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// TimelineOptions configures Timeline.
type TimelineOptions struct {
	// Location is the time zone of the times shown; nil means local time.
	Location *time.Location
	// Follow keeps reading at the end of the input, showing events as
	// they are appended, until the context ends.
	Follow bool
	// Poll is how often Follow looks for new lines; 0 means 250ms.
	Poll time.Duration
	// Filter selects the events shown; every event is still verified.
	Filter Filter
	// JSON writes one JSON object per event shown instead of a line of
	// text: {"line":N,"verified":true,"event":{…}}, and {"line":N,"error":…}
	// at the first bad line.
	JSON bool
	// Now, when set, adds how long ago each event was ("3m ago").
	Now func() time.Time
}

// Filter selects events. Its zero value selects every event.
type Filter struct {
	// Run and Session select the events of one run, or of one session
	// (whose steps' events carry the session's id as their run id).
	Run, Session string
	// Tool selects the events of one tool; Kinds those of some kinds.
	Tool  string
	Kinds []Kind
	// Since selects the events written at or after it, Until those
	// written before it.
	Since, Until time.Time
}

// Match reports whether f selects ev.
func (f Filter) Match(ev Event) bool {
	c := &ev.Context
	switch {
	case f.Run != "" && c.RunID != f.Run,
		f.Session != "" && c.RunID != f.Session && c.Details["session"] != f.Session,
		f.Tool != "" && c.Tool != f.Tool,
		len(f.Kinds) > 0 && !slices.Contains(f.Kinds, ev.Kind),
		!f.Since.IsZero() && ev.TS.Before(f.Since),
		!f.Until.IsZero() && !ev.TS.Before(f.Until):
		return false
	}
	return true
}

// Timeline writes one readable line per event of the log r to w, with a
// date line whenever the date changes, verifying the chain as it goes. At
// the first bad line it writes "!! line N: why" and goes on showing the
// events that are intact on their own, each marked "?", then returns the
// *Error. Text from the log is shown with control and bidirectional
// characters escaped, so a hostile command line cannot drive the terminal.
func Timeline(ctx context.Context, w io.Writer, r io.Reader, opts TimelineOptions) (Report, error) {
	t := timeline{w: w, loc: opts.Location, v: NewVerifier(""), opts: opts}
	if t.loc == nil {
		t.loc = time.Local
	}
	poll := opts.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	lr := newLineReader(r, MaxLineBytes)
	for {
		line, err := lr.next()
		switch {
		case err == nil:
			t.line(line)
			continue
		case errors.Is(err, ErrLineTooLong):
			t.fail(t.v.TooLong())
			return t.v.Report(), t.err
		case !errors.Is(err, io.EOF):
			return t.v.Report(), fmt.Errorf("audit: read: %w", err)
		}
		if !opts.Follow {
			if t.err == nil {
				_, err := t.v.End(line)
				t.fail(err)
			}
			return t.v.Report(), t.err
		}
		select {
		case <-ctx.Done():
			return t.v.Report(), t.err
		case <-time.After(poll):
		}
	}
}

// timeline is the state of one Timeline call.
type timeline struct {
	w    io.Writer
	loc  *time.Location
	v    *Verifier
	err  error
	date string
	opts TimelineOptions
	n    int // the line number of the line being shown
}

func (t *timeline) line(line []byte) {
	t.n++
	if t.err == nil {
		ev, ok, err := t.v.Line(line)
		if ok {
			t.show(ev, "")
			return
		}
		if err == nil {
			return // damaged: the next line says whether it was repaired
		}
		t.fail(err)
	}
	if ev, err := ParseLine(line); err == nil {
		t.show(ev, "? ")
	}
}

func (t *timeline) fail(err error) {
	if err == nil || t.err != nil {
		return
	}
	t.err = err
	if t.opts.JSON {
		line := 0
		var e *Error
		if errors.As(err, &e) {
			line = e.Line
		}
		_ = termtext.WriteJSON(t.w, struct {
			Line  int    `json:"line"`
			Error string `json:"error"`
		}{line, err.Error()}, "")
		return
	}
	fmt.Fprintf(t.w, "!! %v\n", err)
}

func (t *timeline) show(ev Event, mark string) {
	if !t.opts.Filter.Match(ev) {
		return
	}
	if t.opts.JSON {
		_ = termtext.WriteJSON(t.w, struct {
			Line     int   `json:"line"`
			Verified bool  `json:"verified"`
			Event    Event `json:"event"`
		}{t.n, mark == "", ev}, "")
		return
	}
	ts := ev.TS.In(t.loc)
	if d := ts.Format(time.DateOnly); d != t.date {
		t.date = d
		fmt.Fprintf(t.w, "--- %s %s\n", d, ts.Format("MST"))
	}
	ago := ""
	if t.opts.Now != nil {
		ago = fmt.Sprintf("%7s ", Ago(t.opts.Now().Sub(ev.TS)))
	}
	fmt.Fprintf(t.w, "%s%s%s\n", mark, ago, FormatEvent(ev, t.loc))
}

// Ago says how long ago d was, in one unit: "now", "42s ago", "3m ago",
// "5h ago", "12d ago".
func Ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// Bytes writes a number of bytes for people: "512 bytes", "1.0 KiB",
// "1.0 MiB", "3.2 GiB" (IEC units, one decimal).
func Bytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, unit := float64(n)/1024, 0
	for v >= 1024 && unit < 4 {
		v /= 1024
		unit++
	}
	return fmt.Sprintf("%.1f %s", v, [...]string{"KiB", "MiB", "GiB", "TiB", "PiB"}[unit])
}

// byteCounts finds the byte counts that reasons spell out.
var byteCounts = regexp.MustCompile(`\b(\d{4,}) bytes\b`)

// humanBytes rewrites "1048576 bytes" in a reason as "1.0 MiB".
func humanBytes(s string) string {
	return byteCounts.ReplaceAllStringFunc(s, func(m string) string {
		n, err := strconv.ParseInt(strings.TrimSuffix(m, " bytes"), 10, 64)
		if err != nil {
			return m
		}
		return Bytes(n)
	})
}

// FormatEvent renders one event as a timeline line: time, run (or
// session), tool (or task), subject, what was decided and where, and the
// reason with its byte counts in IEC units, e.g.
//
//	12:00:01 run-3f2a9c81d0e4 run_tests    git clone https://attacker.example/repo denied at the command gate: …
//
// Text from the event is escaped (see Timeline).
func FormatEvent(ev Event, loc *time.Location) string {
	if loc == nil {
		loc = time.Local
	}
	c := &ev.Context
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-16s %-12s ", ev.TS.In(loc).Format(time.TimeOnly), termtext.Clip(orDash(c.RunID), 32),
		termtext.Clip(orDash(cmp.Or(c.Tool, c.Task)), 24))
	b.WriteString(termtext.Clip(subject(ev), 72))
	if v := verdict(ev); v != "" {
		b.WriteString(" " + v)
	}
	b.WriteString(": " + termtext.Clip(humanBytes(ev.Reason), 400))
	return b.String()
}

// subject names what the event is about.
func subject(ev Event) string {
	c := &ev.Context
	switch ev.Kind {
	case KindCommand:
		return commandLine(c)
	case KindEgress:
		host := c.Host
		if host == "" && len(c.Addresses) > 0 {
			host = c.Addresses[0]
		}
		if c.Port != 0 {
			return net.JoinHostPort(host, strconv.Itoa(int(c.Port)))
		}
		return host
	case KindResource:
		if c.Command != "" || c.Path != "" {
			return commandLine(c)
		}
		return "the run"
	case KindBehavioral:
		return "ALERT " + c.Alert
	}
	if c.Event != "" {
		return c.Event
	}
	return string(ev.Kind)
}

// verdict says what was decided and where.
func verdict(ev Event) string {
	gate := cmp.Or(string(ev.Context.Gate), string(ev.Kind))
	switch ev.Decision {
	case DecisionAllow:
		return "allowed at the " + gate + " gate"
	case DecisionDeny:
		return "denied at the " + gate + " gate"
	case DecisionEscalate:
		return "escalated at the " + gate + " gate (needs approval)"
	case DecisionKill:
		if ev.Context.KilledBy != "" {
			return "killed by the " + ev.Context.KilledBy + " cap"
		}
		return "killed by a cap"
	case DecisionInfo:
		if ev.Kind == KindResource {
			return "ended within its caps"
		}
	}
	return ""
}

// commandLine renders a command and its arguments, quoting an argument
// only where a shell reader would need it.
func commandLine(c *Context) string {
	parts := []string{cmp.Or(c.Command, c.Path)}
	for _, a := range c.Args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`;&|<>(){}*?[]#~") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
