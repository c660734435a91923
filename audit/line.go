package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

// lineBody is an Event without its hash: the bytes that are hashed.
type lineBody struct {
	Seq      uint64    `json:"seq"`
	TS       time.Time `json:"ts"`
	Kind     Kind      `json:"kind"`
	Decision string    `json:"decision"`
	Reason   string    `json:"reason"`
	Context  Context   `json:"context"`
	Prev     string    `json:"prev"`
}

func encodeBody(ev *Event) ([]byte, error) {
	return json.Marshal(lineBody{
		Seq: ev.Seq, TS: ev.TS, Kind: ev.Kind, Decision: ev.Decision,
		Reason: ev.Reason, Context: ev.Context, Prev: ev.Prev,
	})
}

// encodeLine sets ev.Hash and returns the line, newline included.
func encodeLine(ev *Event) ([]byte, error) {
	body, err := encodeBody(ev)
	if err != nil {
		return nil, fmt.Errorf("audit: encode event: %w", err)
	}
	sum := sha256.Sum256(body)
	ev.Hash = hex.EncodeToString(sum[:])
	line := make([]byte, 0, len(body)+hashTailLen)
	line = append(line, body[:len(body)-1]...)
	line = append(line, hashPrefix...)
	line = append(line, ev.Hash...)
	line = append(line, hashSuffix...)
	return append(line, '\n'), nil
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
// the line's place in the chain; a Verifier does.
func ParseLine(line []byte) (Event, error) {
	var ev Event
	if len(line) > MaxLineBytes {
		return ev, errors.New(reasonTooLong)
	}
	want, err := LineHash(line)
	if err != nil {
		return ev, err
	}
	if string(line[len(line)-hashTailLen+len(hashPrefix):len(line)-len(hashSuffix)]) != want {
		return ev, errors.New(reasonBadHash)
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return ev, errors.New(reasonWrongType)
		}
		return ev, errors.New(reasonBadJSON)
	}
	if err := checkFields(&ev); err != nil {
		return ev, err
	}
	body, err := encodeBody(&ev)
	if err != nil || !bytes.Equal(body[:len(body)-1], line[:len(line)-hashTailLen]) {
		return ev, errors.New(notCanonical(line))
	}
	return ev, nil
}

// notCanonical says why a line that decodes is not in canonical form. It
// runs only for a bad line, so the common path decodes once, leniently,
// and relies on the re-encoding to catch every deviation.
func notCanonical(line []byte) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var ev Event
	if err := dec.Decode(&ev); err != nil && strings.HasPrefix(err.Error(), "json: unknown field") {
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
	case !isHash(ev.Prev):
		return errors.New(reasonBadPrev)
	}
	return nil
}

// isHash reports whether s is 64 lower-case hex digits.
func isHash(s string) bool { return isHex(s, sha256.Size*2) }

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
