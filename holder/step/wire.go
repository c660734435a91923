package step

import (
	"encoding/base64"
	"errors"
	"io"
	"strconv"
	"time"
)

// maxAnswer bounds an answer's frame: an Answer is a status and a
// sentence.
const maxAnswer = 64 << 10

// Frame returns body as one frame of the holder's protocol: its length,
// 4 bytes big-endian, then body.
func Frame(body []byte) []byte {
	n := len(body)
	return append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, body...)
}

// FrameSize is the length of the body that a frame's first 4 bytes
// announce.
func FrameSize(head [4]byte) int {
	return int(head[0])<<24 | int(head[1])<<16 | int(head[2])<<8 | int(head[3])
}

// requestFrame is the holder's request of a step: {"op":"step","step":R}
// (package holder's request).
func requestFrame(r Request) []byte {
	body := append([]byte(`{"op":"`+Op+`","step":`), encode(nil, r.fields())...)
	return Frame(append(body, '}'))
}

// terminateFrame is the request that follows a step's when its client
// was sent SIGTERM.
var terminateFrame = Frame([]byte(`{"op":"` + OpTerminate + `"}`))

// readAnswer reads one answer frame.
func readAnswer(r io.Reader) (Answer, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return Answer{}, err
	}
	n := FrameSize(head)
	if n > maxAnswer {
		return Answer{}, errors.New("step: an answer of " + strconv.Itoa(n) + " bytes")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return Answer{}, err
	}
	var a Answer
	return a, a.UnmarshalJSON(body)
}

// field is one field of a message: its key and its value, a *string,
// *[]string, *bool, *int or *time.Duration.
type field struct {
	key string
	v   any
}

func (r *Request) fields() []field {
	return []field{{"session", &r.Session}, {"tool", &r.Tool}, {"argv", &r.Argv}, {"env", &r.Env}, {"cwd", &r.Cwd},
		{"timeout", &r.Timeout}, {"approval", &r.Approval}, {"grace", &r.Grace}, {"json", &r.JSON}, {"result", &r.Result},
		{"quiet", &r.Quiet}, {"stdoutTerminal", &r.StdoutTerminal}, {"stderrTerminal", &r.StderrTerminal}}
}

func (a *Answer) fields() []field {
	return []field{{"accepted", &a.Accepted}, {"error", &a.Error}, {"exitCode", &a.ExitCode}}
}

// MarshalJSON writes r as encoding/json writes its fields, each string as
// the base64 of its bytes ([]byte's form).
func (r Request) MarshalJSON() ([]byte, error) { return encode(nil, r.fields()), nil }

// UnmarshalJSON reads what MarshalJSON writes, strictly: every field at
// most once, no other, no space.
func (r *Request) UnmarshalJSON(b []byte) error {
	var x Request
	if err := decode(b, x.fields()); err != nil {
		return err
	}
	*r = x
	return nil
}

// MarshalJSON writes a as Request.MarshalJSON writes a Request.
func (a Answer) MarshalJSON() ([]byte, error) { return encode(nil, a.fields()), nil }

// UnmarshalJSON reads what MarshalJSON writes, as Request.UnmarshalJSON.
func (a *Answer) UnmarshalJSON(b []byte) error {
	var x Answer
	if err := decode(b, x.fields()); err != nil {
		return err
	}
	*a = x
	return nil
}

// encode appends fs as a JSON object.
func encode(b []byte, fs []field) []byte {
	b = append(b, '{')
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), f.key...), `":`...)
		switch v := f.v.(type) {
		case *string:
			b = appendString(b, *v)
		case *[]string:
			if *v == nil {
				b = append(b, "null"...)
				break
			}
			b = append(b, '[')
			for j, s := range *v {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendString(b, s)
			}
			b = append(b, ']')
		case *bool:
			b = strconv.AppendBool(b, *v)
		case *int:
			b = strconv.AppendInt(b, int64(*v), 10)
		case *time.Duration:
			b = strconv.AppendInt(b, int64(*v), 10)
		}
	}
	return append(b, '}')
}

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, []byte(s))
	return append(b, '"')
}

// errBad is decode's error.
var errBad = errors.New("step: not a message of a step")

// decode reads the JSON object b into fs.
func decode(b []byte, fs []field) error {
	d := decoder{b: b}
	seen := make([]bool, len(fs))
	d.want('{')
	for d.err == nil && !d.next('}') {
		if d.i > 1 {
			d.want(',')
		}
		key := d.token()
		i := 0
		for i < len(fs) && fs[i].key != key {
			i++
		}
		if i == len(fs) || seen[i] {
			return errBad
		}
		seen[i] = true
		d.want(':')
		d.value(fs[i].v)
	}
	if d.err == nil && d.i != len(b) {
		return errBad
	}
	return d.err
}

// decoder reads a message; its first error sticks.
type decoder struct {
	b   []byte
	i   int
	err error
}

// next reports whether c comes next, and takes it if so.
func (d *decoder) next(c byte) bool {
	if d.err == nil && d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) want(c byte) {
	if !d.next(c) {
		d.err = errBad
	}
}

// token reads a JSON string that needs no escape: a key, or base64.
func (d *decoder) token() string {
	d.want('"')
	start := d.i
	for d.err == nil && d.i < len(d.b) && d.b[d.i] != '"' {
		if c := d.b[d.i]; c == '\\' || c < 0x20 {
			d.err = errBad
		}
		d.i++
	}
	end := d.i
	d.want('"')
	return string(d.b[start:end])
}

// word reads a number, true or false.
func (d *decoder) word() string {
	start := d.i
	for d.i < len(d.b) && (d.b[d.i] == '-' || d.b[d.i] >= '0' && d.b[d.i] <= '9' || d.b[d.i] >= 'a' && d.b[d.i] <= 'z') {
		d.i++
	}
	return string(d.b[start:d.i])
}

func (d *decoder) str() string {
	b, err := base64.StdEncoding.Strict().DecodeString(d.token())
	if err != nil && d.err == nil {
		d.err = errBad
	}
	return string(b)
}

// value reads a value into v, of v's type.
func (d *decoder) value(v any) {
	switch v := v.(type) {
	case *string:
		*v = d.str()
	case *[]string:
		if d.word() == "null" {
			return
		}
		d.want('[')
		*v = []string{}
		for d.err == nil && !d.next(']') {
			if len(*v) > 0 {
				d.want(',')
			}
			*v = append(*v, d.str())
		}
	case *bool:
		switch d.word() {
		case "true":
			*v = true
		case "false":
		default:
			d.err = errBad
		}
	case *int:
		n, err := strconv.ParseInt(d.word(), 10, strconv.IntSize)
		*v = int(n)
		d.fail(err)
	case *time.Duration:
		n, err := strconv.ParseInt(d.word(), 10, 64)
		*v = time.Duration(n)
		d.fail(err)
	}
}

func (d *decoder) fail(err error) {
	if err != nil && d.err == nil {
		d.err = errBad
	}
}
