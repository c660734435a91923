package audit

import (
	"slices"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/decision"
)

// Limits on one event's fields, applied only to an event whose line would
// be longer than MaxEventBytes.
const (
	clipField   = 1 << 10  // bytes kept of one string
	clipArgs    = 16 << 10 // bytes kept of all arguments together
	clipEntries = 64       // entries kept of a list or of details
)

// clip shortens ev's long fields so that its line fits MaxEventBytes, and
// marks it Truncated. What is kept is a prefix of each field, so the
// reader still sees what was asked for.
func clip(ev *Event) {
	ev.Reason = clipString(ev.Reason, clipField)
	c := &ev.Context
	for _, s := range []*string{&c.RunID, &c.Tool, &c.Task, &c.Rule, &c.Event, &c.Command,
		&c.Path, &c.Host, &c.Protocol, &c.KilledBy, &c.Alert, &c.ChainID, &c.RepairedSHA256} {
		*s = clipString(*s, clipField)
	}
	c.Gate = decision.Gate(clipString(string(c.Gate), clipField))
	// The slices are the caller's: copy before shortening in place.
	c.Args = slices.Clone(c.Args)
	c.Addresses = slices.Clone(c.Addresses)
	budget := clipArgs
	for i, a := range c.Args {
		a = clipString(a, min(clipField, budget))
		c.Args[i] = a
		budget -= len(a)
		if budget <= 0 || i+1 == clipEntries {
			c.Args = c.Args[:i+1]
			break
		}
	}
	if len(c.Addresses) > clipEntries {
		c.Addresses = c.Addresses[:clipEntries]
	}
	for i, a := range c.Addresses {
		c.Addresses[i] = clipString(a, clipField)
	}
	if len(c.TriggerSeqs) > clipEntries {
		c.TriggerSeqs = c.TriggerSeqs[len(c.TriggerSeqs)-clipEntries:]
	}
	if len(c.Details) > 0 {
		keys := make([]string, 0, len(c.Details))
		for k := range c.Details {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		d := make(map[string]string, min(len(keys), clipEntries))
		for _, k := range keys[:min(len(keys), clipEntries)] {
			d[clipString(k, clipField)] = clipString(c.Details[k], clipField)
		}
		c.Details = d
	}
	c.Truncated = true
}

// rawSize is a lower bound of the length of ev's line: the length of its
// strings, unescaped.
func rawSize(ev *Event) int {
	c := &ev.Context
	n := len(ev.Reason) + len(c.Command) + len(c.Path) + len(c.Host)
	for _, a := range c.Args {
		n += len(a)
	}
	for _, a := range c.Addresses {
		n += len(a)
	}
	for k, v := range c.Details {
		n += len(k) + len(v)
	}
	return n
}

// clipString returns at most n bytes of s, cut at a rune boundary.
func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
