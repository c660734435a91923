package strict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// parseJSON parses data into a node tree, refusing duplicate keys and
// trailing data. encoding/json's streaming tokenizer does the lexing;
// positions are recovered from its input offsets.
func parseJSON(data []byte, what string) (*node, error) {
	p := &jsonParser{data: data, dec: json.NewDecoder(bytes.NewReader(data)), lineStarts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	p.dec.UseNumber()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	start := p.next()
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, errorAt(p.pos(start), "trailing data after the "+what+" object",
			"a "+what+" file holds exactly one JSON object")
	}
	return n, nil
}

type jsonParser struct {
	data       []byte
	dec        *json.Decoder
	lineStarts []int // offset of the first byte of each line
}

// maxDepth bounds nesting; the formats decoded here are a few levels deep.
const maxDepth = 32

// next returns the offset where the next token starts.
func (p *jsonParser) next() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// pos converts a byte offset to a 1-based line and column (in bytes).
func (p *jsonParser) pos(off int) pos {
	off = min(off, len(p.data))
	line := sort.SearchInts(p.lineStarts, off+1) // lines starting at or before off
	return pos{line, off - p.lineStarts[line-1] + 1}
}

func (p *jsonParser) token() (json.Token, pos, error) {
	start := p.next()
	tok, err := p.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, pos{}, errorAt(p.pos(int(se.Offset)), "invalid JSON: "+se.Error(), p.syntaxHint(int(se.Offset)))
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, pos{}, errorAt(p.pos(len(p.data)), "unexpected end of input", "")
		default:
			return nil, pos{}, errorAt(p.pos(start), "invalid JSON: "+err.Error(), "")
		}
	}
	return tok, p.pos(start), nil
}

// syntaxHint says how to fix the two JSON mistakes people make most, at
// the byte the tokenizer refused (at off or just before it, as it counts):
// a comment, and a comma before a closing bracket or brace.
func (p *jsonParser) syntaxHint(off int) string {
	for _, at := range []int{off - 1, off} {
		if at < 0 || at >= len(p.data) {
			continue
		}
		switch c := p.data[at]; c {
		case '/', '#':
			return "JSON has no comments: remove it, or write the policy in YAML (a .yaml file), where # starts a comment"
		case ']', '}':
			if prev := bytes.TrimRight(p.data[:at], " \t\r\n"); len(prev) > 0 && prev[len(prev)-1] == ',' {
				return fmt.Sprintf("JSON allows no comma before %c: remove the trailing comma", c)
			}
		}
	}
	return ""
}

func (p *jsonParser) value(depth int) (*node, error) {
	tok, at, err := p.token()
	if err != nil {
		return nil, err
	}
	if depth > maxDepth {
		return nil, errorAt(at, "nesting too deep", "")
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull, pos: at}, nil
	case bool:
		return &node{kind: kindBool, pos: at, scalar: fmt.Sprint(t)}, nil
	case json.Number:
		return &node{kind: kindNumber, pos: at, scalar: t.String()}, nil
	case string:
		return &node{kind: kindString, pos: at, scalar: t}, nil
	case json.Delim:
		if t == '[' {
			n := &node{kind: kindArray, pos: at}
			for p.dec.More() {
				item, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, item)
			}
			_, _, err := p.token()
			return n, err
		}
		n := &node{kind: kindObject, pos: at}
		seen := map[string]pos{}
		for p.dec.More() {
			ktok, kpos, err := p.token()
			if err != nil {
				return nil, err
			}
			key := ktok.(string) // the decoder guarantees object keys are strings
			if first, dup := seen[key]; dup {
				return nil, errorAt(kpos, fmt.Sprintf("duplicate key %q (first at line %d, column %d)", key, first.line, first.col),
					"a key may appear once per object; merge the two entries")
			}
			seen[key] = kpos
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.fields = append(n.fields, field{key: key, keyPos: kpos, value: v})
		}
		_, _, err := p.token()
		return n, err
	}
	return nil, errorAt(at, fmt.Sprintf("unexpected JSON token %v", tok), "")
}
