package strict

import "bytes"

// yamlScanDepth is the nesting at which yamlTooDeep stops a YAML file
// before the library parses it. Any depth beyond maxDepth is refused
// anyway, at its line and column, once parsed; this earlier cut exists
// because the library's own limit (10,000 levels) reports no column, and
// no line for a file of one line. It is set far above maxDepth so that
// the scan's approximations (below) never refuse a file that parses.
const yamlScanDepth = 1000

// yamlTooDeep returns where the nesting of data first goes deeper than
// limit: flow collections ('[' and '{') and the block sequence entries or
// complex keys that open on one line ("- - - x"), outside comments and
// quoted scalars. It is a scan, not a parser: it may miss nesting (the
// library then refuses the file, with less precise a position) and it
// counts a bracket inside a block scalar, which only a file with
// hundreds of unclosed brackets there would notice.
func yamlTooDeep(data []byte, limit int) (pos, bool) {
	line, lineStart := 1, 0
	flow, entries := 0, 0 // open flow collections; block entries opened on this line
	lineHead := true      // nothing but indentation and entries yet on this line
	prev := byte('\n')
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			line, lineStart, entries, lineHead = line+1, i+1, 0, true
		case c == '#' && isYAMLBlank(prev):
			if j := bytes.IndexByte(data[i:], '\n'); j > 0 {
				i += j - 1
			} else {
				i = len(data)
			}
			c = ' '
		case (c == '"' || c == '\'') && tokenStart(prev):
			end := quotedEnd(data, i)
			line += bytes.Count(data[i:end], []byte{'\n'})
			if j := bytes.LastIndexByte(data[i:end], '\n'); j >= 0 {
				lineStart = i + j + 1
			}
			i, c, lineHead = end-1, 'x', false
		case flow == 0 && lineHead && (c == '-' || c == '?') && (i+1 == len(data) || isYAMLBlank(data[i+1])):
			entries++
		case c == '[' || c == '{':
			if flow > 0 || tokenStart(prev) {
				flow++
			}
			lineHead = false
		case (c == ']' || c == '}') && flow > 0:
			flow--
		case c == ' ' || c == '\t' || c == '\r':
		default:
			lineHead = false
		}
		if flow+entries > limit {
			return pos{line, i - lineStart + 1}, true
		}
		prev = c
	}
	return pos{}, false
}

func isYAMLBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// tokenStart reports whether a byte after prev starts a token rather than
// continuing a plain scalar.
func tokenStart(prev byte) bool {
	return isYAMLBlank(prev) || prev == '[' || prev == '{' || prev == ',' || prev == ':'
}

// quotedEnd returns the offset just after the quoted scalar that starts
// at data[i] (its quote), or len(data) when it is not closed: a double-
// quoted scalar ends at an unescaped '"', a single-quoted one at a '\”
// not doubled.
func quotedEnd(data []byte, i int) int {
	q := data[i]
	for j := i + 1; j < len(data); j++ {
		switch {
		case q == '"' && data[j] == '\\':
			j++
		case data[j] == q && q == '\'' && j+1 < len(data) && data[j+1] == '\'':
			j++
		case data[j] == q:
			return j + 1
		}
	}
	return len(data)
}
