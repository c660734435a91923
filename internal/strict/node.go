package strict

import "strconv"

// kind is the type of a parsed value, independent of the source format.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// pos is a 1-based line and column in the source.
type pos struct{ line, col int }

// node is one parsed value with its position. JSON and YAML are both
// parsed into nodes so that one strict decoder serves both formats and
// every error can name a line and column.
type node struct {
	kind   kind
	pos    pos
	scalar string // the text of a bool, number or string
	items  []*node
	fields []field
}

// field is one key of an object, in source order.
type field struct {
	key    string
	keyPos pos
	value  *node
}

// Field returns path followed by the object key key, as decode paths are
// written: "toolScopes.run_tests", `egress.taskAllowlist["a b"]`.
func Field(path, key string) string { return joinPath(path, segment(key, -1)) }

// Index returns path followed by the array index i: "steps[2]".
func Index(path string, i int) string { return joinPath(path, segment("", i)) }

// segment renders one step of a path: an object key or an array index.
func segment(key string, index int) string {
	if key == "" && index >= 0 {
		return "[" + strconv.Itoa(index) + "]"
	}
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "[" + strconv.Quote(key) + "]"
		}
	}
	if key == "" {
		return `[""]`
	}
	return "." + key
}

// joinPath appends a segment to a path; the root path is "".
func joinPath(path, seg string) string {
	if path == "" && len(seg) > 0 && seg[0] == '.' {
		return seg[1:]
	}
	return path + seg
}
