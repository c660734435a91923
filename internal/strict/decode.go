package strict

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// decoder fills Go values from a node tree strictly: an unknown field, a
// wrong type or an out-of-range number is an error at its line and column.
// It records where every field was written so that validation errors can
// point at the source too. (encoding/json's DisallowUnknownFields reports
// neither lines nor duplicate keys, hence this small decoder.)
type decoder struct {
	where map[string]pos // path -> position of the value
}

func (d *decoder) decode(n *node, v reflect.Value, path string) (err error) {
	d.where[path] = n.pos
	defer func() {
		if e, ok := err.(*Error); ok && e.Path == "" {
			e.Path = path
		}
	}()
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if n.kind == kindNull {
			return errorAt(n.pos, "null is not allowed here", "remove the field to take the default")
		}
		p := reflect.New(t.Elem())
		if err := d.decode(n, p.Elem(), path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return d.object(n, v, path)
	case reflect.Map:
		if n.kind != kindObject {
			return wrongType(n, "an object")
		}
		m := reflect.MakeMapWithSize(t, len(n.fields))
		for _, f := range n.fields {
			elem := reflect.New(t.Elem()).Elem()
			if err := d.decode(f.value, elem, joinPath(path, segment(f.key, -1))); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(f.key), elem)
		}
		v.Set(m)
		return nil
	case reflect.Slice:
		if n.kind != kindArray {
			return wrongType(n, "an array")
		}
		s := reflect.MakeSlice(t, len(n.items), len(n.items))
		for i, item := range n.items {
			if err := d.decode(item, s.Index(i), joinPath(path, segment("", i))); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.String:
		if n.kind != kindString {
			return wrongType(n, "a string")
		}
		v.SetString(n.scalar)
		return nil
	case reflect.Bool:
		if n.kind != kindBool {
			hint := ""
			if n.kind == kindString && (n.scalar == "true" || n.scalar == "false") {
				hint = "write " + n.scalar + " without quotes"
			}
			return &Error{Line: n.pos.line, Col: n.pos.col, Msg: "expected a boolean, found " + n.kind.String(), Hint: hint}
		}
		v.SetBool(n.scalar == "true")
		return nil
	case reflect.Int64:
		if n.kind != kindNumber {
			return wrongType(n, "an integer")
		}
		i, err := strconv.ParseInt(n.scalar, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(n.scalar, 64)
			switch {
			case ferr == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53:
				i = int64(f) // 1e3 and 10.0 are integers
			case math.IsInf(f, 0) || ferr == nil && f == math.Trunc(f):
				return errorAt(n.pos, fmt.Sprintf("%s is not an integer in range", n.scalar), "it is far too large")
			default:
				return errorAt(n.pos, fmt.Sprintf("%s is not an integer in range", n.scalar), "use a whole number")
			}
		}
		v.SetInt(i)
		return nil
	case reflect.Float64:
		if n.kind != kindNumber {
			return wrongType(n, "a number")
		}
		f, err := strconv.ParseFloat(n.scalar, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return errorAt(n.pos, fmt.Sprintf("%s is not a number in range", n.scalar), "")
		}
		v.SetFloat(f)
		return nil
	}
	return fmt.Errorf("strict: internal error: cannot decode into %s", t)
}

func (d *decoder) object(n *node, v reflect.Value, path string) error {
	if n.kind != kindObject {
		return wrongType(n, "an object")
	}
	fields := jsonFields(v.Type())
	for _, f := range n.fields {
		idx, ok := fields[f.key]
		if !ok {
			e := unknownField(f, fields)
			e.Path = joinPath(path, segment(f.key, -1))
			return e
		}
		if err := d.decode(f.value, v.Field(idx), joinPath(path, segment(f.key, -1))); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields maps the JSON names of a struct's fields to their indexes.
func jsonFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

func wrongType(n *node, want string) *Error {
	return errorAt(n.pos, fmt.Sprintf("expected %s, found %s", want, n.kind), "")
}

func unknownField(f field, known map[string]int) *Error {
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names)
	hint := "known fields here: " + strings.Join(names, ", ")
	if best := closest(f.key, names); best != "" {
		hint = fmt.Sprintf("did you mean %q?", best)
	}
	return errorAt(f.keyPos, fmt.Sprintf("unknown field %q", f.key), hint)
}

// closest returns the known name nearest to s (case-insensitive equality
// or an edit distance of at most 2), or "".
func closest(s string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if strings.EqualFold(n, s) {
			return n
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
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
