package audit

import (
	"crypto/sha256"
	"encoding/hex"
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
	hashArgv(&ev.Context)
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

// hashArgv sets c's ArgvSHA256 and EnvSHA256 from the whole command line
// and environment, unless the caller set them (an alert that copies a
// shortened command keeps the hash of the whole).
func hashArgv(c *Context) {
	if c.ArgvSHA256 == "" && (c.Command != "" || len(c.Args) > 0) {
		c.ArgvSHA256 = nulHash(append([]string{c.Command}, c.Args...))
	}
	if c.EnvSHA256 == "" && len(c.Env) > 0 {
		c.EnvSHA256 = nulHash(c.Env)
	}
}

// nulHash is the hex SHA-256 of each string followed by a NUL byte.
func nulHash(ss []string) string {
	h := sha256.New()
	for _, s := range ss {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// clip shortens ev's long fields to the limits divided by div, and marks
// it Truncated. A command, an argument or an environment entry keeps its
// start in place and its end in Context.Tails, and the hashes cover the
// whole (hashArgv); any other field keeps its start. The caller's slices
// and maps are not changed.
func clip(ev *Event, div int) {
	field, args, entries := clipField/div, clipArgs/div, max(clipEntries/div, 1)
	ev.Reason = clipString(ev.Reason, field)
	c := &ev.Context
	c.Tails = slices.Clone(c.Tails)
	c.Command = c.clipEnds("command", c.Command, field)
	for _, s := range []*string{&c.RunID, &c.Tool, &c.Task, &c.Rule, &c.Event,
		&c.Path, &c.Host, &c.Protocol, &c.KilledBy, &c.Alert, &c.ChainID, &c.RepairedSHA256} {
		*s = clipString(*s, field)
	}
	c.Gate = decision.Gate(clipString(string(c.Gate), field))
	c.Args = c.clipList("args", c.Args, field, args, entries)
	c.Env = c.clipList("env", c.Env, field, args, entries)
	c.Addresses = slices.Clone(c.Addresses)
	if len(c.Tails) > 2*entries+2 {
		c.Tails = append(c.Tails[:2*entries+1], c.Tails[len(c.Tails)-1])
	}
	for i := range c.Tails {
		c.Tails[i].Field = clipString(c.Tails[i].Field, field)
		c.Tails[i].Tail = clipString(c.Tails[i].Tail, field)
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

// clipList shortens a list of strings named name to budget bytes and
// entries entries, each to field bytes, keeping both ends of each (see
// clipEnds). When entries are dropped, the end of the last one is kept.
func (c *Context) clipList(name string, list []string, field, budget, entries int) []string {
	out := slices.Clone(list)
	for i, a := range out {
		a = c.clipEnds(fmt.Sprintf("%s.%d", name, i), a, min(field, max(budget, 2)))
		out[i] = a
		budget -= len(a)
		if (budget <= 0 || i+1 == entries) && i+1 < len(out) {
			last := len(list) - 1
			c.Tails = append(c.Tails, Tail{Field: fmt.Sprintf("%s.%d", name, last), Bytes: len(list[last]),
				Tail: tailString(list[last], field/2)})
			return out[:i+1]
		}
	}
	return out
}

// clipEnds returns the first half of s when it is longer than n, and keeps
// its last n/2 bytes in c.Tails under name.
func (c *Context) clipEnds(name, s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := clipString(s, n/2)
	c.Tails = append(c.Tails, Tail{Field: name, Bytes: len(s), Tail: tailString(s, n-len(head))})
	return head
}

// tailString returns at most the last n bytes of s; a valid UTF-8 string
// is cut at a rune boundary.
func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - max(n, 0)
	if utf8.ValidString(s) {
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
	}
	return s[i:]
}

// rawSize is a lower bound of the length of ev's line: the length of its
// strings, unescaped.
func rawSize(ev *Event) int {
	c := &ev.Context
	n := len(ev.Reason) + len(c.Command) + len(c.Path) + len(c.Host)
	for _, list := range [...][]string{c.Args, c.Env, c.Addresses} {
		for _, a := range list {
			n += len(a)
		}
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
