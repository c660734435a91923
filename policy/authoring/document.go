package authoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/airlock-sandbox/airlock/internal/strict"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

// document is a policy file as a tree of YAML nodes, whichever format it
// came in, so that additions keep the order of what was there and, in
// YAML, its comments; it is written back in its own format.
type document struct {
	name string
	yaml bool
	doc  *yaml.Node // the document node
}

// parseDocument reads data, a policy file that loaded as name, into a
// document.
func parseDocument(name string, data []byte) (*document, error) {
	data = strict.TrimBOM(data)
	d := &document{name: name, yaml: policy.IsYAML(name, data)}
	if d.yaml {
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		d.doc = &doc
	} else {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		root, err := jsonNode(dec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		d.doc = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	}
	if d.doc.Kind != yaml.DocumentNode || len(d.doc.Content) != 1 || d.doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a policy object", name)
	}
	return d, nil
}

// root is the policy object.
func (d *document) root() *yaml.Node { return d.doc.Content[0] }

// clone returns a deep copy of d, to edit and then keep or drop.
func (d *document) clone() *document {
	return &document{name: d.name, yaml: d.yaml, doc: cloneNode(d.doc)}
}

func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = cloneNode(k)
	}
	return &c
}

// bytes writes d in its format: YAML through the YAML encoder, JSON
// through encoding/json's string encoding, two spaces an indent, a
// container on one line when it fits.
func (d *document) bytes() ([]byte, error) {
	var b bytes.Buffer
	if d.yaml {
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(d.doc); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	if err := writeJSON(&b, d.root(), 0); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// readsBack reports whether l, parsed from d's bytes, is what d means:
// for YAML, the policy d's tree gives when written as JSON, field for
// field (JSON's strings are written by encoding/json, and a YAML encoder
// could quote or fold a string otherwise than it reads).
func (d *document) readsBack(l *policy.Loaded) bool {
	if !d.yaml {
		return true
	}
	var b bytes.Buffer
	if err := writeJSON(&b, d.root(), 0); err != nil {
		return false
	}
	j, err := policy.Parse("readback.json", b.Bytes())
	return err == nil && reflect.DeepEqual(j.Policy, l.Policy)
}

// jsonNode reads one JSON value from dec as a node.
func jsonNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if t == '{' {
			n.Kind, n.Tag = yaml.MappingNode, "!!map"
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, strNode(k.(string)))
			}
			v, err := jsonNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		_, err := dec.Token() // the closing delimiter
		return n, err
	case string:
		return strNode(t), nil
	case json.Number:
		tag := "!!float"
		if _, err := strconv.ParseInt(t.String(), 10, 64); err == nil {
			tag = "!!int"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// valueNode is v, encoded as encoding/json encodes it, as a node: in
// YAML, a list of plain values is written on one line.
func valueNode(v any) (*yaml.Node, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	n, err := jsonNode(dec)
	if err != nil {
		return nil, err
	}
	flowLists(n)
	return n, nil
}

// flowLists sets the flow style on every sequence of scalars under n.
func flowLists(n *yaml.Node) {
	if n.Kind == yaml.SequenceNode && allScalars(n) {
		n.Style = yaml.FlowStyle
		return
	}
	for _, c := range n.Content {
		flowLists(c)
	}
}

func allScalars(n *yaml.Node) bool {
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return false
		}
	}
	return true
}

// get returns the value of key in the mapping m, or nil.
func get(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// set makes v the value of key in the mapping m, in the key's place when
// it is there, else at the end, and returns the key's node.
func set(m *yaml.Node, key string, v *yaml.Node) *yaml.Node {
	m.Style &^= yaml.FlowStyle
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return m.Content[i]
		}
	}
	k := strNode(key)
	m.Content = append(m.Content, k, v)
	return k
}

// ensure returns the value of key in the mapping m, adding an empty node
// of kind when there is none. An existing value of another kind is an
// error: the policy would not have loaded.
func ensure(m *yaml.Node, key string, kind yaml.Kind) (*yaml.Node, error) {
	m.Style &^= yaml.FlowStyle // a block is added under it: so must it be one
	if v := get(m, key); v != nil {
		if v.Kind != kind {
			return nil, fmt.Errorf("%s is not %s", key, kindName(kind))
		}
		v.Style &^= yaml.FlowStyle
		return v, nil
	}
	v := &yaml.Node{Kind: kind, Tag: "!!map"}
	if kind == yaml.SequenceNode {
		v.Tag = "!!seq"
	}
	m.Content = append(m.Content, strNode(key), v)
	return v, nil
}

// path walks keys from the root, adding mappings where there are none.
func (d *document) path(keys ...string) (*yaml.Node, error) {
	n := d.root()
	for _, k := range keys {
		var err error
		if n, err = ensure(n, k, yaml.MappingNode); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a value"
}

// jsonWidth is the width a container is written within on one line.
const jsonWidth = 100

// writeJSON writes n as JSON at the given indent, a container on one
// line when it fits; at indent -1, on one line, with a space after each
// comma and colon.
func writeJSON(w *bytes.Buffer, n *yaml.Node, indent int) error {
	if n.Kind == yaml.ScalarNode {
		return writeScalar(w, n)
	}
	if indent > 0 {
		var line bytes.Buffer
		if err := writeJSON(&line, n, -1); err != nil {
			return err
		}
		if indent+line.Len() <= jsonWidth {
			w.Write(line.Bytes())
			return nil
		}
	}
	open, close, step := "[", "]", 1
	if n.Kind == yaml.MappingNode {
		open, close, step = "{", "}", 2
	}
	if len(n.Content) == 0 {
		w.WriteString(open + close)
		return nil
	}
	// sep goes before each item, but the first on one line; end before
	// the close.
	next, sep, end := -1, " ", ""
	if indent >= 0 {
		next, sep, end = indent+2, "\n"+strings.Repeat(" ", indent+2), "\n"+strings.Repeat(" ", indent)
	} else if step == 2 {
		open, close = "{ ", " }"
	}
	w.WriteString(open)
	for i := 0; i < len(n.Content); i += step {
		if i > 0 {
			w.WriteByte(',')
		}
		if i > 0 || indent >= 0 {
			w.WriteString(sep)
		}
		v := n.Content[i]
		if step == 2 {
			if err := writeScalar(w, v); err != nil {
				return err
			}
			w.WriteString(": ")
			v = n.Content[i+1]
		}
		if err := writeJSON(w, v, next); err != nil {
			return err
		}
	}
	w.WriteString(end + close)
	return nil
}

// writeScalar writes a scalar node of a JSON document: a string as
// termtext.JSON writes it (encoding/json's, with every character that
// does not print escaped), any other value as the text it was read as.
func writeScalar(w *bytes.Buffer, n *yaml.Node) error {
	switch {
	case n.Kind != yaml.ScalarNode:
		return errors.New("a key that is not a string")
	case n.Tag == "!!bool": // YAML also reads True and TRUE
		w.WriteString(strconv.FormatBool(strings.EqualFold(n.Value, "true")))
		return nil
	case n.Tag != "!!str":
		w.WriteString(n.Value)
		return nil
	}
	b, err := termtext.JSON(n.Value, "")
	if err != nil {
		return err
	}
	w.Write(bytes.TrimSuffix(b, []byte("\n")))
	return nil
}
