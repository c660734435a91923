package runbook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// The plan is decoded by hand over encoding/json's tokenizer rather than
// with json.Unmarshal, which matches field names case-insensitively,
// keeps the last of two duplicate keys, accepts null for anything and
// reports unknown fields without a position: each of those would let a
// typo change what runs. The plan's shape is small and fixed, so a
// walker per object is shorter than a general strict decoder; the policy
// package has one for its larger format.

// pos is a 1-based line and byte column.
type pos struct{ line, col int }

// planDecoder walks the tokens of one plan file.
type planDecoder struct {
	data       []byte
	dec        *json.Decoder
	lineStarts []int
	where      map[string]pos // field path -> position of its value
}

func decodePlan(data []byte) (*Plan, map[string]pos, error) {
	if len(data) > MaxPlanBytes {
		return nil, nil, &PlanError{Msg: fmt.Sprintf("plan is larger than %d bytes", MaxPlanBytes),
			Hint: "check that this is the right file"}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, &PlanError{Line: 1, Col: 1, Msg: "empty plan",
			Hint: `write a plan object, e.g. {"testId": "t1", "steps": [{"tool": "run_tests", "command": "pytest"}]}`}
	}
	d := &planDecoder{data: data, dec: json.NewDecoder(bytes.NewReader(data)), lineStarts: []int{0}, where: map[string]pos{}}
	for i, c := range data {
		if c == '\n' {
			d.lineStarts = append(d.lineStarts, i+1)
		}
	}
	var p Plan
	err := d.object("", "plan", map[string]func(string) error{
		"testId":      func(at string) error { return d.str(at, &p.TestID) },
		"description": func(at string) error { return d.str(at, &p.Description) },
		"task":        func(at string) error { return d.str(at, &p.Task) },
		"steps":       func(at string) error { return d.steps(at, &p.Steps) },
	})
	if err != nil {
		return nil, nil, err
	}
	start := d.next()
	if _, err := d.dec.Token(); err != io.EOF {
		return nil, nil, d.errAt(start, "trailing data after the plan object", "a plan file holds exactly one JSON object")
	}
	return &p, d.where, nil
}

// steps decodes the steps array.
func (d *planDecoder) steps(at string, out *[]Step) error {
	return d.array(at, "an array of steps", func(i int, elem string) error {
		if i >= MaxSteps {
			return d.errAt(d.next(), fmt.Sprintf("more than %d steps", MaxSteps), "split the plan into several plans")
		}
		var s Step
		err := d.object(elem, "step", map[string]func(string) error{
			"name":              func(at string) error { return d.str(at, &s.Name) },
			"tool":              func(at string) error { return d.str(at, &s.Tool) },
			"command":           func(at string) error { return d.str(at, &s.Command) },
			"args":              func(at string) error { return d.strings(at, &s.Args) },
			"continueOnFailure": func(at string) error { return d.boolean(at, &s.ContinueOnFailure) },
		})
		*out = append(*out, s)
		return err
	})
}

// object decodes an object whose members are the keys of fields, each
// at most once and in exactly that spelling.
func (d *planDecoder) object(path, what string, fields map[string]func(string) error) error {
	tok, at, err := d.token()
	if err != nil {
		return err
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return d.wrongType(at, path, "an object ("+what+")", tok)
	}
	d.where[path] = at
	seen := map[string]bool{}
	for d.dec.More() {
		tok, kat, err := d.token()
		if err != nil {
			return err
		}
		key := tok.(string) // the tokenizer only yields string keys here
		fpath := joinPath(path, key)
		decode, known := fields[key]
		switch {
		case !known:
			return &PlanError{Line: kat.line, Col: kat.col, Path: fpath,
				Msg: fmt.Sprintf("unknown field %q in the %s", key, what), Hint: knownHint(key, fields)}
		case seen[key]:
			return &PlanError{Line: kat.line, Col: kat.col, Path: fpath,
				Msg: fmt.Sprintf("duplicate field %q", key), Hint: "give each field once"}
		}
		seen[key] = true
		if err := decode(fpath); err != nil {
			return err
		}
	}
	_, _, err = d.token() // '}'
	return err
}

// array decodes an array, calling elem for each element.
func (d *planDecoder) array(path, what string, elem func(i int, path string) error) error {
	tok, at, err := d.token()
	if err != nil {
		return err
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '[' {
		return d.wrongType(at, path, what, tok)
	}
	d.where[path] = at
	for i := 0; d.dec.More(); i++ {
		if err := elem(i, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	_, _, err = d.token() // ']'
	return err
}

func (d *planDecoder) str(path string, out *string) error {
	tok, at, err := d.token()
	if err != nil {
		return err
	}
	s, ok := tok.(string)
	if !ok {
		return d.wrongType(at, path, "a string", tok)
	}
	d.where[path] = at
	*out = s
	return nil
}

func (d *planDecoder) boolean(path string, out *bool) error {
	tok, at, err := d.token()
	if err != nil {
		return err
	}
	b, ok := tok.(bool)
	if !ok {
		return d.wrongType(at, path, "true or false", tok)
	}
	d.where[path] = at
	*out = b
	return nil
}

func (d *planDecoder) strings(path string, out *[]string) error {
	*out = []string{}
	return d.array(path, "an array of strings", func(_ int, elem string) error {
		var s string
		err := d.str(elem, &s)
		*out = append(*out, s)
		return err
	})
}

// token returns the next token and where it starts.
func (d *planDecoder) token() (json.Token, pos, error) {
	start := d.next()
	tok, err := d.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, pos{}, d.errAt(int(se.Offset), "invalid JSON: "+se.Error(), "")
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, pos{}, d.errAt(len(d.data), "unexpected end of input", "")
		default:
			return nil, pos{}, d.errAt(start, "invalid JSON: "+err.Error(), "")
		}
	}
	return tok, d.pos(start), nil
}

// next returns the offset where the next token starts.
func (d *planDecoder) next() int {
	off := int(d.dec.InputOffset())
	for off < len(d.data) {
		switch d.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// pos converts a byte offset to a line and column.
func (d *planDecoder) pos(off int) pos {
	off = min(off, len(d.data))
	line := sort.SearchInts(d.lineStarts, off+1)
	return pos{line, off - d.lineStarts[line-1] + 1}
}

func (d *planDecoder) errAt(off int, msg, hint string) *PlanError {
	p := d.pos(off)
	return &PlanError{Line: p.line, Col: p.col, Msg: msg, Hint: hint}
}

func (d *planDecoder) wrongType(at pos, path, want string, tok json.Token) *PlanError {
	e := &PlanError{Line: at.line, Col: at.col, Path: path, Msg: "want " + want + ", got " + tokenKind(tok)}
	if tok == nil {
		e.Hint = "null is not a value here; leave the field out instead"
	}
	return e
}

func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return "an array"
	}
	return "something else"
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// knownHint names the known fields, and the closest one to a misspelt
// key (a case-only difference included).
func knownHint(key string, fields map[string]func(string) error) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
		if strings.EqualFold(n, key) {
			return fmt.Sprintf("field names are case-sensitive: did you mean %q?", n)
		}
	}
	sort.Strings(names)
	best, bestD := "", 3
	for _, n := range names {
		if dist := editDistance(strings.ToLower(key), strings.ToLower(n)); dist < bestD {
			best, bestD = n, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q? (known fields: %s)", best, strings.Join(names, ", "))
	}
	return "known fields: " + strings.Join(names, ", ")
}

// editDistance is the Levenshtein distance between two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
