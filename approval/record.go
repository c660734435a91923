package approval

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"
)

// A record file is a body and, after it, the HMAC-SHA256 of the body under
// the store's key: the seal. The body is a canonical binary encoding, so
// that it is stored losslessly (an argument need not be UTF-8, which JSON
// could not carry) and the seal is checked before anything is parsed.
// encoding/gob and JSON are neither canonical nor lossless for these
// strings, hence this small encoding: every string is its length
// (uvarint) and its bytes, every number a varint, every time its Unix
// nanoseconds.
//
//	body = magic, kind, id, fields of the kind
//	file = body, HMAC-SHA256(key, body)
const magic = "airlock approval record 2\n"

// magicV1 began the records of the airlock before format 2, whose
// requests bound only the argv, tool, session and policy: a sealed record
// of that format is refused (ErrOutdated), never read as a request bound
// to less than Request.Bound holds.
const magicV1 = "airlock approval record 1\n"

// The kinds of record; each has its own file suffix.
const (
	kindRequest byte = 'R' // <id>.request: the request, written by Create
	kindAnswer  byte = 'A' // <id>.answer: the answer, written once by Answer
	kindUsed    byte = 'U' // <id>.used: the redemption, written once by Redeem
)

// Bounds on what a record holds. An argv and an environment are at most
// what Linux passes to a program (about 2 MiB for both); the rest are
// names, paths, digests and sentences.
const (
	maxString     = 64 << 10 // one field of a request
	maxArgvBytes  = 2 << 20  // the argv and the environment in all
	maxArgs       = 1 << 16  // entries of each
	maxAnswerBy   = 1 << 10
	maxAnswerText = 4 << 10
	// A record: the argv and the environment with a length (at most 3
	// bytes) before each entry, its 15 other strings, and room for the
	// rest.
	maxRecord = maxArgvBytes + 2*maxArgs*3 + 16*maxString + 4096
	// defaultMaxLive bounds the requests of a store that have not expired,
	// and so its size, against an agent that escalates in a loop.
	defaultMaxLive = 512
)

var (
	errFormat   = errors.New("its contents do not decode")
	errOutdated = errors.New("it is sealed, and of the format of an older airlock")
)

func seal(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(body)
}

// unseal checks the seal of a record file and returns its body after the
// magic, kind and id, which must be the ones expected.
func unseal(key, file []byte, kind byte, id string) (*decoder, error) {
	if len(file) < sha256.Size {
		return nil, errFormat
	}
	body, mac := file[:len(file)-sha256.Size], file[len(file)-sha256.Size:]
	m := hmac.New(sha256.New, key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), mac) {
		return nil, errors.New("its seal does not match")
	}
	if bytes.HasPrefix(body, []byte(magicV1)) {
		return nil, errOutdated
	}
	d := &decoder{b: body}
	if d.raw(len(magic)) != magic || d.byte() != kind || d.str() != id || d.err != nil {
		return nil, errors.New("it is sealed but names another record")
	}
	return d, nil
}

func header(kind byte, id string) *encoder {
	e := &encoder{b: append([]byte(magic), kind)}
	e.str(id)
	return e
}

func encodeRequest(r Request) []byte {
	e := header(kindRequest, r.ID)
	e.str(r.Session)
	e.str(r.Tool)
	e.strs(r.Argv)
	e.str(r.Program)
	e.str(r.ProgramDigest)
	e.strs(r.Env)
	e.str(r.Cwd)
	e.str(r.Stdin)
	e.int(r.StdinBytes)
	e.str(r.Task)
	e.str(r.Workspace)
	e.str(r.Image)
	e.str(r.PolicyDigest)
	e.str(r.Rule)
	e.str(r.Reason)
	e.str(r.Justification)
	e.time(r.Created)
	e.time(r.Expires)
	return e.b
}

func decodeRequest(d *decoder, id string) (Request, error) {
	r := Request{ID: id, Session: d.str(), Tool: d.str(), Argv: d.strs(),
		Program: d.str(), ProgramDigest: d.str(), Env: d.strs(), Cwd: d.str(), Stdin: d.str(), StdinBytes: d.int(),
		Task: d.str(), Workspace: d.str(), Image: d.str(),
		PolicyDigest: d.str(), Rule: d.str(), Reason: d.str(), Justification: d.str(), Created: d.time(), Expires: d.time()}
	return r, d.end()
}

func encodeAnswer(id string, a Answer) []byte {
	e := header(kindAnswer, id)
	e.bool(a.Allow)
	e.str(a.By)
	e.str(a.Reason)
	e.time(a.At)
	return e.b
}

func decodeAnswer(d *decoder) (Answer, error) {
	a := Answer{Allow: d.bool(), By: d.str(), Reason: d.str(), At: d.time()}
	return a, d.end()
}

func encodeUsed(id string, at time.Time) []byte {
	e := header(kindUsed, id)
	e.time(at)
	return e.b
}

type encoder struct{ b []byte }

func (e *encoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) strs(ss []string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func (e *encoder) int(v int64) { e.b = binary.AppendVarint(e.b, v) }

func (e *encoder) time(t time.Time) { e.int(t.UnixNano()) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// decoder reads what encoder wrote; the first problem sticks in err and
// every later read returns a zero value.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() { d.err, d.b = errFormat, nil }

func (d *decoder) raw(n int) string {
	if n > len(d.b) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// uvarint and int accept only the shortest encoding of a number, so that
// one record has one encoding.
func (d *decoder) uvarint() uint64 { return number(d, binary.Uvarint, binary.AppendUvarint) }

func (d *decoder) int() int64 { return number(d, binary.Varint, binary.AppendVarint) }

// number reads a number with decode, if encode writes it back in as many
// bytes.
func number[T uint64 | int64](d *decoder, decode func([]byte) (T, int), encode func([]byte, T) []byte) T {
	v, n := decode(d.b)
	if n <= 0 || n != len(encode(nil, v)) {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	return d.raw(int(n))
}

func (d *decoder) strs() []string {
	n := d.uvarint()
	if n > uint64(len(d.b)) { // every string takes at least a byte
		d.fail()
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.str()
	}
	return ss
}

func (d *decoder) time() time.Time {
	v := d.int()
	if d.err != nil {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail()
	return false
}

// end reports a decoding problem or bytes left over.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = errFormat
	}
	return d.err
}
