package audit

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/decision"
)

// Limits on one event's fields, applied only to an event whose line would
// be longer than MaxEventBytes; divided by 4, 16, … while it still is.
const (
	clipField   = 1 << 10  // bytes kept of one string
	clipArgs    = 16 << 10 // bytes kept of all arguments together
	clipEntries = 64       // entries kept of a list or of details
	clipMaxDiv  = 1 << 10  // the last divisor: a few bytes of each field
)

// encodeFitting encodes ev's line (setting its hash), shortening its long
// fields first when the line would be longer than MaxEventBytes, harder
// each time until it fits: a hostile command line or host name, however
// long and whatever its bytes (control characters take six bytes each
// escaped, bytes that are not UTF-8 four thirds in base64), makes a line
// shortened, never one that cannot be written.
func encodeFitting(ev *Event) ([]byte, error) {
	if rawSize(ev) <= MaxEventBytes { // else skip encoding megabytes first
		if line, err := encodeLine(ev); err != nil || len(line) <= MaxEventBytes {
			return line, err
		}
	}
	orig := *ev
	for div := 1; div <= clipMaxDiv; div *= 4 {
		*ev = orig
		clip(ev, div)
		if line, err := encodeLine(ev); err != nil || len(line) <= MaxEventBytes {
			return line, err
		}
	}
	return nil, fmt.Errorf("audit: event is over the %d byte limit even shortened", MaxEventBytes)
}

// clip shortens ev's long fields to the limits divided by div, and marks
// it Truncated. What is kept is a prefix of each field, so the reader
// still sees what was asked for. The caller's slices and maps are not
// changed.
func clip(ev *Event, div int) {
	field, args, entries := clipField/div, clipArgs/div, max(clipEntries/div, 1)
	ev.Reason = clipString(ev.Reason, field)
	c := &ev.Context
	for _, s := range []*string{&c.RunID, &c.Tool, &c.Task, &c.Rule, &c.Event, &c.Command,
		&c.Path, &c.Host, &c.Protocol, &c.KilledBy, &c.Alert, &c.ChainID, &c.RepairedSHA256} {
		*s = clipString(*s, field)
	}
	c.Gate = decision.Gate(clipString(string(c.Gate), field))
	c.Args = slices.Clone(c.Args)
	c.Addresses = slices.Clone(c.Addresses)
	budget := args
	for i, a := range c.Args {
		a = clipString(a, min(field, budget))
		c.Args[i] = a
		budget -= len(a)
		if budget <= 0 || i+1 == entries {
			c.Args = c.Args[:i+1]
			break
		}
	}
	if len(c.Addresses) > entries {
		c.Addresses = c.Addresses[:entries]
	}
	for i, a := range c.Addresses {
		c.Addresses[i] = clipString(a, field)
	}
	if len(c.TriggerSeqs) > entries {
		c.TriggerSeqs = c.TriggerSeqs[len(c.TriggerSeqs)-entries:]
	}
	if len(c.Details) > 0 {
		keys := make([]string, 0, len(c.Details))
		for k := range c.Details {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		d := make(map[string]string, min(len(keys), entries))
		for _, k := range keys[:min(len(keys), entries)] {
			d[clipString(k, field)] = clipString(c.Details[k], field)
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

// clipString returns at most n bytes of s; a valid UTF-8 string is cut at
// a rune boundary, so that it stays valid.
func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	if utf8.ValidString(s) {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
	}
	return s[:n]
}
