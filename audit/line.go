package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Genesis is the prev of a log's first line: 64 zeros.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// MaxLineBytes is the longest line a reader accepts, newline excluded. A
// longer line is an error, found without reading it into memory.
const MaxLineBytes = 1 << 20

// MaxEventBytes is the longest line a writer produces. An event that would
// be longer has its long fields shortened (Context.Truncated), so that a
// hostile command line cannot make a decision unloggable.
const MaxEventBytes = 64 << 10

// hashPrefix and hashSuffix surround a line's hash, its last member.
const (
	hashPrefix = `,"hash":"`
	hashSuffix = `"}`
	// hashTailLen is the length of the hash member with its closing brace.
	hashTailLen = len(hashPrefix) + sha256.Size*2 + len(hashSuffix)
)

// encodeLine sets ev.Hash and returns the line, newline included.
func encodeLine(ev *Event) ([]byte, error) {
	body, err := encodeBody(ev)
	if err != nil {
		return nil, fmt.Errorf("audit: encode event: %w", err)
	}
	sum := sha256.Sum256(body)
	ev.Hash = hex.EncodeToString(sum[:])
	return append(body[:len(body)-1], hashPrefix+ev.Hash+hashSuffix+"\n"...), nil
}

// roundTrips checks that line, ev's encoding, reads back as ev: that it
// verifies and gives back every byte of every field. The writer checks
// each line so before it writes it, so that no event, whatever its
// bytes, can make the log unverifiable.
func roundTrips(ev *Event, line []byte) error {
	back, legacy, err := parseLine(line[:len(line)-1])
	if err == nil && (legacy || !sameEvent(ev, &back)) {
		err = errors.New("it reads back as another event")
	}
	if err != nil {
		return fmt.Errorf("audit: event not written: its line would not verify: %v", err)
	}
	return nil
}

// sameEvent reports whether a and b hold the same values, an empty list
// or map being the same as none (a line omits both).
func sameEvent(a, b *Event) bool {
	if !a.TS.Equal(b.TS) {
		return false
	}
	x, y := *a, *b
	for _, ev := range []*Event{&x, &y} {
		ev.TS = time.Time{}
		c := &ev.Context
		if len(c.Args) == 0 {
			c.Args = nil
		}
		if len(c.Addresses) == 0 {
			c.Addresses = nil
		}
		if len(c.Env) == 0 {
			c.Env = nil
		}
		if len(c.Tails) == 0 {
			c.Tails = nil
		}
		if len(c.TriggerSeqs) == 0 {
			c.TriggerSeqs = nil
		}
		if len(c.Details) == 0 {
			c.Details = nil
		}
	}
	return reflect.DeepEqual(x, y)
}

// LineHash computes the hash that a line (without its newline) should
// carry, from its bytes alone: SHA-256 over the line with its final hash
// member cut off and '}' put back. It does not check that the line carries
// that hash; ParseLine does.
func LineHash(line []byte) (string, error) {
	if len(line) < hashTailLen+2 || !bytes.HasPrefix(line[len(line)-hashTailLen:], []byte(hashPrefix)) ||
		!bytes.HasSuffix(line, []byte(hashSuffix)) {
		return "", errors.New(reasonNoHash)
	}
	h := sha256.New()
	h.Write(line[:len(line)-hashTailLen])
	h.Write([]byte{'}'})
	return hex.EncodeToString(h.Sum(nil)), nil
}

// The reasons a single line is refused. They never echo the line.
const (
	reasonTooLong   = "line is longer than the 1 MiB limit"
	reasonNoHash    = "not an audit line: it does not end with a hash member"
	reasonBadHash   = "hash does not match the line's contents: the line was edited"
	reasonBadJSON   = "not a valid JSON object"
	reasonUnknown   = "has a member that is not part of the format"
	reasonWrongType = "has a member of the wrong type"
	reasonNoSeq     = "seq is missing or zero"
	reasonNoTS      = "ts is missing"
	reasonNoReason  = "reason is empty"
	reasonBadPrev   = "prev is not a 64-digit lower-case hex hash"
	reasonCanonical = "not in canonical form: members reordered, duplicated, re-spaced or re-escaped"
)

// ParseLine decodes one line (without its newline) and checks it on its
// own: its length, its hash, its form and its fields. It does not check
// the line's place in the chain; a Verifier does. A line in the legacy
// form (see Report.Lossy) is accepted.
func ParseLine(line []byte) (Event, error) {
	ev, _, err := parseLine(line)
	return ev, err
}

// parseLine is ParseLine that also says whether the line is in the legacy
// form: canonical but for bytes that were not UTF-8, which an airlock
// before the text encoding wrote as \ufffd.
func parseLine(line []byte) (Event, bool, error) {
	if len(line) > MaxLineBytes {
		return Event{}, false, errors.New(reasonTooLong)
	}
	want, err := LineHash(line)
	if err != nil {
		return Event{}, false, err
	}
	if string(line[len(line)-hashTailLen+len(hashPrefix):len(line)-len(hashSuffix)]) != want {
		return Event{}, false, errors.New(reasonBadHash)
	}
	ev, err := decodeLine(line)
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) || errors.Is(err, errNotText) {
			return Event{}, false, errors.New(reasonWrongType)
		}
		return Event{}, false, errors.New(reasonBadJSON)
	}
	if err := checkFields(&ev); err != nil {
		return ev, false, err
	}
	body, err := encodeBody(&ev)
	if err != nil {
		return ev, false, errors.New(reasonCanonical)
	}
	canon, got := body[:len(body)-1], line[:len(line)-hashTailLen]
	switch {
	case bytes.Equal(canon, got):
		return ev, false, nil
	case legacyForm(got, canon):
		return ev, true, nil
	}
	return ev, false, errors.New(notCanonical(line))
}

// legacyForm reports whether line is canon with some U+FFFD written as
// the escape \ufffd, as encoding/json writes each byte that is not UTF-8:
// the form of a line that an airlock before the text encoding wrote for
// a string that was not valid UTF-8. Such a line's bytes are hashed as
// they are, so its hash and chain still hold; only the replaced bytes
// are lost.
func legacyForm(line, canon []byte) bool {
	const esc = `\ufffd`
	if !bytes.Contains(line, []byte(esc)) {
		return false
	}
	out, replaced := make([]byte, 0, len(line)), false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] != '\\':
			out = append(out, line[i])
		case bytes.HasPrefix(line[i:], []byte(esc)):
			out = append(out, "\ufffd"...)
			i += len(esc) - 1
			replaced = true
		case i+1 < len(line):
			out = append(out, line[i], line[i+1]) // another escape, kept whole
			i++
		default:
			return false
		}
	}
	return replaced && bytes.Equal(out, canon)
}

// notCanonical says why a line that decodes is not in canonical form. It
// runs only for a bad line, so the common path decodes once, leniently,
// and relies on the re-encoding to catch every deviation.
func notCanonical(line []byte) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var w wireLine
	if err := dec.Decode(&w); err != nil && strings.HasPrefix(err.Error(), "json: unknown field") {
		return reasonUnknown
	}
	return reasonCanonical
}

// checkFields checks the members that every line must carry.
func checkFields(ev *Event) error {
	switch {
	case ev.Seq == 0:
		return errors.New(reasonNoSeq)
	case ev.TS.IsZero():
		return errors.New(reasonNoTS)
	case !ev.Kind.Valid():
		return fmt.Errorf("unknown kind %s", shown(string(ev.Kind)))
	case !validDecision(ev.Decision):
		return fmt.Errorf("unknown decision %s", shown(ev.Decision))
	case ev.Reason == "":
		return errors.New(reasonNoReason)
	case !IsHash(ev.Prev):
		return errors.New(reasonBadPrev)
	}
	return nil
}

// IsHash reports whether s is spelled as a line's hash is: 64 lower-case
// hex digits (as a head given to VerifyWith must be).
func IsHash(s string) bool { return isHex(s, sha256.Size*2) }

// isHex reports whether s is n lower-case hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// shown quotes at most 40 bytes of s for an error message, escaping
// anything that is not printable.
func shown(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "..."
	}
	return strconv.Quote(s)
}
