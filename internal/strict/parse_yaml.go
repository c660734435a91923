package strict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// parseYAML parses data into a node tree. The YAML library reports
// duplicate keys itself; anchors, aliases, explicit tags and multiple
// documents are refused so a file always reads the way it looks (and no
// alias can multiply its size).
func parseYAML(data []byte, what string) (*node, error) {
	if at, deep := yamlTooDeep(data, yamlScanDepth); deep {
		return nil, errorAt(at, "nesting too deep", "")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, errorAt(pos{1, 1}, "empty "+what, "write a "+what+" object")
		}
		return nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		at := pos{extra.Line, extra.Column}
		if err != nil {
			return nil, yamlError(err)
		}
		return nil, errorAt(at, "trailing data: a second YAML document", "a "+what+" file holds exactly one document")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errorAt(pos{doc.Line, doc.Column}, what+" is not a single YAML document", "")
	}
	return fromYAML(doc.Content[0], 0, what)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns the library's error into an *Error with a line. The
// library gives lines only (no columns), and none for a problem on the
// first line, which is where such an error is then.
func yamlError(err error) error {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = "yaml: " + te.Errors[0]
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return &Error{Line: 1, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

func fromYAML(y *yaml.Node, depth int, what string) (*node, error) {
	at := pos{y.Line, y.Column}
	if depth > maxDepth {
		return nil, errorAt(at, "nesting too deep", "")
	}
	if err := plainYAML(y, what); err != nil {
		return nil, err
	}
	switch y.Kind {
	case yaml.AliasNode:
		return nil, errorAt(at, "YAML anchors and aliases are not allowed in a "+what, "write the value out in full")
	case yaml.MappingNode:
		n := &node{kind: kindObject, pos: at}
		seen := map[string]pos{}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			kpos := pos{k.Line, k.Column}
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return nil, errorAt(kpos, "object keys must be plain strings", "")
			}
			if err := plainYAML(k, what); err != nil {
				return nil, err
			}
			if first, dup := seen[k.Value]; dup {
				return nil, errorAt(kpos, fmt.Sprintf("duplicate key %q (first at line %d, column %d)", k.Value, first.line, first.col),
					"a key may appear once per object; merge the two entries")
			}
			seen[k.Value] = kpos
			val, err := fromYAML(v, depth+1, what)
			if err != nil {
				return nil, err
			}
			n.fields = append(n.fields, field{key: k.Value, keyPos: kpos, value: val})
		}
		return n, nil
	case yaml.SequenceNode:
		n := &node{kind: kindArray, pos: at}
		for _, c := range y.Content {
			item, err := fromYAML(c, depth+1, what)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
		}
		return n, nil
	case yaml.ScalarNode:
		switch y.Tag {
		case "!!null":
			return &node{kind: kindNull, pos: at}, nil
		case "!!bool":
			var b bool
			if err := y.Decode(&b); err != nil {
				return nil, errorAt(at, "invalid boolean "+strconv.Quote(y.Value), "write true or false")
			}
			return &node{kind: kindBool, pos: at, scalar: strconv.FormatBool(b)}, nil
		case "!!int", "!!float":
			return &node{kind: kindNumber, pos: at, scalar: y.Value}, nil
		case "!!str":
			return &node{kind: kindString, pos: at, scalar: y.Value}, nil
		}
		return nil, errorAt(at, fmt.Sprintf("unsupported YAML value of type %s", y.Tag), "")
	}
	return nil, errorAt(at, "unsupported YAML construct", "")
}

// plainYAML refuses an anchor or an explicit tag on y: a custom tag
// ("!foo {}") would otherwise be dropped without a word, and anchors
// exist only to be aliased.
func plainYAML(y *yaml.Node, what string) error {
	at := pos{y.Line, y.Column}
	switch {
	case y.Anchor != "":
		return errorAt(at, "YAML anchors and aliases are not allowed in a "+what, "write the value out in full")
	case y.Style&yaml.TaggedStyle != 0:
		return errorAt(at, fmt.Sprintf("YAML tag %s is not allowed in a %s", y.Tag, what),
			"remove the tag; quote a value to make it a string")
	}
	return nil
}
