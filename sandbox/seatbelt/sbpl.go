package seatbelt

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxProfile bounds the size of a profile Check reads.
const MaxProfile = 1 << 20

// maxDepth bounds how deeply a profile's lists nest.
const maxDepth = 16

// Rule is one (allow ...) or (deny ...) form of a profile.
type Rule struct {
	// Allow is true for allow, false for deny.
	Allow bool
	// Ops are the operations the rule names, in order.
	Ops []string
	// Filters are its filters, in order; none means every object of the
	// operations. Several filters are alternatives (any one matches).
	Filters []Filter
	// Line is where the rule starts, 1-based.
	Line int
}

// Filter is one filter of a rule: (literal "/bin/ls"), (remote ip
// "localhost:8080"), (target same-sandbox), or a require-all, require-any
// or require-not of filters (Name the combinator, Args empty, Sub the
// filters).
type Filter struct {
	Name string
	Args []string
	Sub  []Filter
}

// Parsed is a parsed profile: its rules in order.
type Parsed struct {
	Rules []Rule
}

// Error is a problem in a profile, at its line and column.
type Error struct {
	Line, Col int
	Msg       string
}

// Error says where and what.
func (e *Error) Error() string { return fmt.Sprintf("profile:%d:%d: %s", e.Line, e.Col, e.Msg) }

// Parse reads a profile in the Seatbelt profile language (SBPL) and
// checks it against what sandbox-exec accepts: balanced forms, strings
// and regular expressions as its reader takes them, "(version 1)" first,
// known operations and filters only, each filter's arguments of the right
// kind and each filter with the operations that can use it, and network
// addresses as "*" or "localhost" with a port, since Seatbelt cannot name
// any other host. Two more rules are airlock's own and refuse profiles
// sandbox-exec would take: the profile must deny by default and may not
// allow by default (the known escapes of allow-default profiles), and it
// may not import another profile (what it pulls in is not in the text
// checked here). The grammar is the subset of SBPL a generated profile
// needs; anything outside it is an error, never skipped.
func Parse(src string) (*Parsed, error) {
	if len(src) > MaxProfile {
		return nil, &Error{1, 1, fmt.Sprintf("profile larger than %d bytes", MaxProfile)}
	}
	if !utf8.ValidString(src) {
		return nil, &Error{1, 1, "profile is not valid UTF-8"}
	}
	l := &lexer{src: src, line: 1, col: 1}
	var forms []*node
	for {
		n, err := l.form(0)
		if err != nil {
			return nil, err
		}
		if n == nil {
			break
		}
		forms = append(forms, n)
	}
	return check(forms)
}

// node is a parsed datum: a list (kids), or an atom of one kind.
type node struct {
	kind      kind
	text      string // the atom's value: a string's contents, a symbol's name
	kids      []*node
	line, col int
}

type kind int

const (
	kList kind = iota
	kSymbol
	kString
	kRegex
	kNumber
	kBool
)

func (k kind) String() string {
	return [...]string{"a list", "a symbol", "a string", "a regular expression", "a number", "a boolean"}[k]
}

type lexer struct {
	src       string
	pos       int
	line, col int
}

func (l *lexer) errAt(line, col int, format string, args ...any) error {
	return &Error{line, col, fmt.Sprintf(format, args...)}
}

// next consumes one byte, keeping the position.
func (l *lexer) next() byte {
	c := l.src[l.pos]
	l.pos++
	if c == '\n' {
		l.line, l.col = l.line+1, 1
	} else {
		l.col++
	}
	return c
}

// skip passes white space and comments.
func (l *lexer) skip() {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == ';':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.next()
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.next()
		default:
			return
		}
	}
}

// form reads one datum; nil at the end of the input.
func (l *lexer) form(depth int) (*node, error) {
	l.skip()
	if l.pos >= len(l.src) {
		return nil, nil
	}
	line, col := l.line, l.col
	switch c := l.src[l.pos]; {
	case c == '(':
		if depth >= maxDepth {
			return nil, l.errAt(line, col, "lists nested deeper than %d", maxDepth)
		}
		l.next()
		n := &node{kind: kList, line: line, col: col}
		for {
			l.skip()
			if l.pos >= len(l.src) {
				return nil, l.errAt(line, col, "list not closed")
			}
			if l.src[l.pos] == ')' {
				l.next()
				return n, nil
			}
			k, err := l.form(depth + 1)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, k)
		}
	case c == ')':
		return nil, l.errAt(line, col, "unexpected )")
	case c == '"':
		s, err := l.str()
		if err != nil {
			return nil, err
		}
		return &node{kind: kString, text: s, line: line, col: col}, nil
	case c == '#':
		return l.hash(line, col)
	case c == '\'' || c == '`' || c == ',':
		return nil, l.errAt(line, col, "quoting (%c) is not part of a profile", c)
	default:
		start := l.pos
		for l.pos < len(l.src) && !strings.ContainsRune(" \t\r\n()\";", rune(l.src[l.pos])) {
			l.next()
		}
		word := l.src[start:l.pos]
		if _, err := strconv.ParseInt(word, 10, 64); err == nil {
			return &node{kind: kNumber, text: word, line: line, col: col}, nil
		}
		if !validSymbol(word) {
			return nil, l.errAt(line, col, "%q is not a symbol", word)
		}
		return &node{kind: kSymbol, text: word, line: line, col: col}, nil
	}
}

// validSymbol: letters, digits and the punctuation of SBPL's names.
func validSymbol(w string) bool {
	if w == "" {
		return false
	}
	for _, c := range w {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_*.?!<>=+/", c)
		if !ok {
			return false
		}
	}
	return true
}

// str reads a string: the escapes its reader takes are \\, \", \n, \t
// and \r; a raw control character or any other escape is an error.
func (l *lexer) str() (string, error) {
	line, col := l.line, l.col
	l.next() // "
	var b strings.Builder
	for {
		if l.pos >= len(l.src) {
			return "", l.errAt(line, col, "string not closed")
		}
		c := l.next()
		switch {
		case c == '"':
			return b.String(), nil
		case c == '\\':
			if l.pos >= len(l.src) {
				return "", l.errAt(line, col, "string not closed")
			}
			e := l.next()
			r, ok := map[byte]byte{'\\': '\\', '"': '"', 'n': '\n', 't': '\t', 'r': '\r'}[e]
			if !ok {
				return "", l.errAt(l.line, l.col-2, "unknown escape \\%c in a string", e)
			}
			b.WriteByte(r)
		case c < 0x20 || c == 0x7f:
			return "", l.errAt(l.line, l.col-1, "control character 0x%02x in a string", c)
		default:
			b.WriteByte(c)
		}
	}
}

// hash reads #t, #f, #o / #x numbers and #"regex" literals.
func (l *lexer) hash(line, col int) (*node, error) {
	l.next() // #
	if l.pos >= len(l.src) {
		return nil, l.errAt(line, col, "# at the end of the profile")
	}
	if l.src[l.pos] == '"' {
		// A regex literal: its backslashes are the expression's own.
		l.next()
		start := l.pos
		for l.pos < len(l.src) && l.src[l.pos] != '"' {
			if c := l.next(); c == '\\' && l.pos < len(l.src) {
				l.next()
			} else if c == '\n' {
				return nil, l.errAt(line, col, "line break in a regular expression")
			}
		}
		if l.pos >= len(l.src) {
			return nil, l.errAt(line, col, "regular expression not closed")
		}
		re := l.src[start:l.pos]
		l.next()
		if _, err := syntax.Parse(re, syntax.POSIX); err != nil {
			return nil, l.errAt(line, col, "regular expression %q: %v", re, err)
		}
		return &node{kind: kRegex, text: re, line: line, col: col}, nil
	}
	start := l.pos
	for l.pos < len(l.src) && !strings.ContainsRune(" \t\r\n()\";", rune(l.src[l.pos])) {
		l.next()
	}
	w := l.src[start:l.pos]
	switch {
	case w == "t" || w == "f":
		return &node{kind: kBool, text: w, line: line, col: col}, nil
	case len(w) > 1 && (w[0] == 'o' || w[0] == 'x'):
		base := map[byte]int{'o': 8, 'x': 16}[w[0]]
		v, err := strconv.ParseUint(w[1:], base, 32)
		if err != nil {
			return nil, l.errAt(line, col, "#%s is not a number", w)
		}
		return &node{kind: kNumber, text: strconv.FormatUint(v, 10), line: line, col: col}, nil
	}
	return nil, l.errAt(line, col, "#%s is not a datum of a profile", w)
}

// check turns the top-level forms into a Profile.
func check(forms []*node) (*Parsed, error) {
	if len(forms) == 0 {
		return nil, &Error{1, 1, "empty profile"}
	}
	p := &Parsed{}
	denyDefault := false
	for i, f := range forms {
		if f.kind != kList || len(f.kids) == 0 || f.kids[0].kind != kSymbol {
			return nil, &Error{f.line, f.col, "a profile holds only forms such as (version 1), (allow ...) and (deny ...)"}
		}
		head := f.kids[0].text
		switch {
		case head == "version":
			if i != 0 {
				return nil, &Error{f.line, f.col, "(version 1) must come first, once"}
			}
			if len(f.kids) != 2 || f.kids[1].kind != kNumber || f.kids[1].text != "1" {
				return nil, &Error{f.line, f.col, "want (version 1)"}
			}
		case i == 0:
			return nil, &Error{f.line, f.col, "the profile must begin with (version 1)"}
		case head == "allow" || head == "deny":
			r, err := rule(f)
			if err != nil {
				return nil, err
			}
			if len(r.Ops) == 1 && r.Ops[0] == "default" {
				if r.Allow {
					return nil, &Error{f.line, f.col, "(allow default) refused: an allow-default profile leaves open what nobody listed (airlock's rule)"}
				}
				denyDefault = true
			}
			p.Rules = append(p.Rules, r)
		case head == "import":
			return nil, &Error{f.line, f.col, "import refused: every rule must be in the profile checked (airlock's rule)"}
		default:
			return nil, &Error{f.line, f.col, fmt.Sprintf("unknown form (%s ...)", head)}
		}
	}
	if !denyDefault {
		return nil, &Error{1, 1, "the profile must (deny default) (airlock's rule)"}
	}
	return p, nil
}

// rule reads an (allow ...) or (deny ...) form.
func rule(f *node) (Rule, error) {
	r := Rule{Allow: f.kids[0].text == "allow", Line: f.line}
	rest := f.kids[1:]
	for len(rest) > 0 && rest[0].kind == kSymbol {
		op := rest[0].text
		if _, ok := operations[op]; !ok {
			return r, &Error{rest[0].line, rest[0].col, fmt.Sprintf("unknown operation %q", op)}
		}
		r.Ops = append(r.Ops, op)
		rest = rest[1:]
	}
	if len(r.Ops) == 0 {
		return r, &Error{f.line, f.col, "a rule names at least one operation"}
	}
	for _, n := range rest {
		if n.kind != kList || len(n.kids) == 0 || n.kids[0].kind != kSymbol {
			return r, &Error{n.line, n.col, "want a filter such as (literal \"/path\")"}
		}
		if n.kids[0].text == "with" {
			if err := modifier(n); err != nil {
				return r, err
			}
			continue
		}
		flt, err := filter(n, r.Ops)
		if err != nil {
			return r, err
		}
		r.Filters = append(r.Filters, flt)
	}
	if slices.Contains(r.Ops, "default") && (len(r.Ops) > 1 || len(r.Filters) > 0) {
		return r, &Error{f.line, f.col, "default stands alone, with no other operation and no filter"}
	}
	return r, nil
}

// modifier checks (with report), (with no-log), (with message "...").
func modifier(n *node) error {
	args := n.kids[1:]
	switch {
	case len(args) == 1 && args[0].kind == kSymbol && (args[0].text == "report" || args[0].text == "no-log" || args[0].text == "no-report"):
		return nil
	case len(args) == 2 && args[0].kind == kSymbol && args[0].text == "message" && args[1].kind == kString:
		return nil
	}
	return &Error{n.line, n.col, "unknown modifier (with ...)"}
}

// filter reads one filter and checks that every operation of the rule
// can use it.
func filter(n *node, ops []string) (Filter, error) {
	name := n.kids[0].text
	args := n.kids[1:]
	switch name {
	case "require-all", "require-any", "require-not":
		if len(args) == 0 || name == "require-not" && len(args) != 1 {
			return Filter{}, &Error{n.line, n.col, fmt.Sprintf("(%s ...) takes %s", name, map[bool]string{true: "one filter", false: "filters"}[name == "require-not"])}
		}
		f := Filter{Name: name}
		for _, a := range args {
			if a.kind != kList || len(a.kids) == 0 || a.kids[0].kind != kSymbol {
				return Filter{}, &Error{a.line, a.col, "want a filter"}
			}
			sub, err := filter(a, ops)
			if err != nil {
				return Filter{}, err
			}
			f.Sub = append(f.Sub, sub)
		}
		return f, nil
	}
	spec, ok := filters[name]
	if !ok {
		return Filter{}, &Error{n.line, n.col, fmt.Sprintf("unknown filter %q", name)}
	}
	if len(args) != len(spec.args) {
		return Filter{}, &Error{n.line, n.col, fmt.Sprintf("(%s ...) takes %d argument(s)", name, len(spec.args))}
	}
	f := Filter{Name: name}
	for i, a := range args {
		if err := spec.args[i](a); err != nil {
			return Filter{}, &Error{a.line, a.col, fmt.Sprintf("(%s ...): %v", name, err)}
		}
		f.Args = append(f.Args, a.text)
	}
	for _, op := range ops {
		if !spec.class.has(operations[op]) {
			return Filter{}, &Error{n.line, n.col, fmt.Sprintf("filter (%s ...) does not apply to operation %s", name, op)}
		}
	}
	return f, nil
}

// argKind checks one argument of a filter.
type argKind func(*node) error

func want(k kind) argKind {
	return func(n *node) error {
		if n.kind != k {
			return fmt.Errorf("want %v, got %v", k, n.kind)
		}
		return nil
	}
}

// absPath: a string naming an absolute path (sandbox-exec refuses a
// relative one in a path filter).
func absPath(n *node) error {
	if n.kind != kString {
		return fmt.Errorf("want a string, got %v", n.kind)
	}
	if !strings.HasPrefix(n.text, "/") {
		return fmt.Errorf("path %q is not absolute", n.text)
	}
	return nil
}

// regexArg: a #"..." literal, or a string holding an expression.
func regexArg(n *node) error {
	switch n.kind {
	case kRegex:
		return nil
	case kString:
		_, err := syntax.Parse(n.text, syntax.POSIX)
		return err
	}
	return fmt.Errorf("want a regular expression, got %v", n.kind)
}

// address: "*" or "localhost", a colon, and "*" or a port. Seatbelt has
// no way to name another host: an IP address here is refused.
func address(n *node) error {
	if n.kind != kString {
		return fmt.Errorf("want a string, got %v", n.kind)
	}
	host, port, ok := strings.Cut(n.text, ":")
	if !ok || host != "*" && host != "localhost" {
		return fmt.Errorf("address %q: the host must be * or localhost (Seatbelt cannot name other hosts)", n.text)
	}
	if port == "*" {
		return nil
	}
	if v, err := strconv.Atoi(port); err != nil || v < 1 || v > 65535 || strconv.Itoa(v) != port {
		return fmt.Errorf("address %q: the port must be * or 1 to 65535", n.text)
	}
	return nil
}

// oneOf: a symbol from a fixed set.
func oneOf(names ...string) argKind {
	return func(n *node) error {
		if n.kind != kSymbol || !slices.Contains(names, n.text) {
			return fmt.Errorf("want one of %s", strings.Join(names, ", "))
		}
		return nil
	}
}

// ipKind is the first argument of (remote ...) and (local ...).
var ipKind = oneOf("ip", "ip4", "ip6", "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6")
