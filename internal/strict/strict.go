// Package strict decodes JSON and YAML files into Go values strictly, the
// way airlock's policy and plan files are read: an unknown field, a wrong
// type, a null, a duplicate key, trailing data, too deep a nesting or a
// file over its size cap is an error naming the line and column, with a
// hint where there is one. It also records where every field was, so that
// a validator's problems can be located too.
//
// encoding/json's Unmarshal matches field names case-insensitively, keeps
// the last of two duplicate keys and reports unknown fields without a
// position; each would let a typo change what airlock enforces. Both
// formats are parsed into one position-carrying tree (JSON with
// encoding/json's tokenizer, YAML with go.yaml.in/yaml/v3's node API) and
// a small reflective decoder fills the Go value from it.
package strict

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
)

// Positions maps a field's path ("steps[2].command") to where its value
// is in the file.
type Positions map[string]pos

// Decode parses data (YAML when yaml is set, else JSON) and fills v, a
// pointer to a struct, strictly. what names the file's kind in messages
// ("policy", "plan"). Struct fields are matched by their json tag, exactly.
// A leading UTF-8 byte order mark is skipped; invalid UTF-8 and raw
// control characters (but tab, line feed and carriage return) are errors.
func Decode(what string, data []byte, yaml bool, maxSize int, v any) (Positions, error) {
	if len(data) > maxSize {
		return nil, &Error{Msg: fmt.Sprintf("%s is larger than %d bytes", what, maxSize),
			Hint: "check that this is the right file"}
	}
	data = TrimBOM(data)
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{Line: 1, Col: 1, Msg: "empty " + what, Hint: "write a " + what + " object, e.g. {}"}
	}
	if err := checkText(data, what); err != nil {
		return nil, err
	}
	parse := parseJSON
	if yaml {
		parse = parseYAML
	}
	root, err := parse(data, what)
	if err != nil {
		return nil, err
	}
	d := &decoder{where: map[string]pos{}}
	if err := d.decode(root, reflect.ValueOf(v).Elem(), ""); err != nil {
		return nil, err
	}
	return d.where, nil
}

// Place names file on every problem, gives each the position of its field,
// and sorts them in file order.
func (p Positions) Place(errs Errors, file string) {
	for _, e := range errs {
		e.File = file
		if at, ok := p[e.Path]; ok {
			e.Line, e.Col = at.line, at.col
		}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		return errs[i].Line < errs[j].Line || errs[i].Line == errs[j].Line && errs[i].Col < errs[j].Col
	})
}

// InFile names file on a Decode error, and returns it.
func InFile(err error, file string) error {
	var e *Error
	if errors.As(err, &e) {
		e.File = file
	}
	return err
}
