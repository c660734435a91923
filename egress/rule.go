package egress

import (
	"errors"
	"fmt"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
)

// httpRule is a compiled RuleConfig.
type httpRule struct {
	name      string
	deny      bool
	methods   []string       // nil: any
	paths     *regexp.Regexp // the globs as one anchored expression; nil: none
	prefixes  []string
	anyPath   bool // neither paths nor prefixes given
	query     map[string][]string
	headers   map[string][]string // canonical header names
	websocket bool
}

// compileRule checks and compiles one rule.
func compileRule(c RuleConfig) (*httpRule, error) {
	r := &httpRule{name: c.Name, deny: c.Deny, websocket: c.WebSocket, prefixes: c.PathPrefixes,
		anyPath: len(c.Paths) == 0 && len(c.PathPrefixes) == 0}
	if c.Name == "" {
		return nil, errors.New("a rule needs a name")
	}
	if c.Deny && c.WebSocket {
		return nil, errors.New(`"websocket" is for allow rules (a deny rule refuses upgrades with the rest)`)
	}
	for _, m := range c.Methods {
		if !slices.Contains(KnownMethods, m) {
			return nil, fmt.Errorf("unknown method %q (known: %s)", m, strings.Join(KnownMethods, ", "))
		}
	}
	if len(c.Methods) > 0 {
		r.methods = c.Methods
	}
	var alts []string
	for _, p := range c.Paths {
		re, err := globExpr(p)
		if err != nil {
			return nil, err
		}
		alts = append(alts, re)
	}
	if len(alts) > 0 {
		r.paths = regexp.MustCompile("^(?:" + strings.Join(alts, "|") + ")$")
	}
	for _, p := range c.PathPrefixes {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("path prefix %q does not start with /", p)
		}
	}
	var err error
	if r.query, err = conditions("query parameter", c.Query, false); err != nil {
		return nil, err
	}
	if r.headers, err = conditions("header", c.Headers, true); err != nil {
		return nil, err
	}
	return r, nil
}

// conditions checks a map of names to values; header names are put in
// canonical form.
func conditions(what string, m map[string][]string, header bool) (map[string][]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string][]string, len(m))
	for k, vs := range m {
		switch {
		case k == "":
			return nil, fmt.Errorf("empty %s name", what)
		case header && !validToken(k):
			return nil, fmt.Errorf("%s name %q is not an HTTP token", what, k)
		case len(vs) == 0:
			return nil, fmt.Errorf("%s %q lists no values (write [\"*\"] for any value)", what, k)
		}
		if header {
			k = textproto.CanonicalMIMEHeaderKey(k)
		}
		out[k] = vs
	}
	return out, nil
}

// validToken reports whether s is an HTTP token (RFC 9110, 5.6.2).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// globExpr turns a path glob into a regular expression: "/**/" matches
// one "/" or any run of segments between two ("/**/admin/**" matches
// "/admin/x"), "**" elsewhere any run of characters, "*" any run without a
// "/", everything else itself. Go's regexp matches in time linear in the
// path, whatever the glob.
func globExpr(glob string) (string, error) {
	if !strings.HasPrefix(glob, "/") {
		return "", fmt.Errorf("path %q does not start with /", glob)
	}
	if strings.Contains(glob, "***") {
		return "", fmt.Errorf("path %q: write * or **, not ***", glob)
	}
	var b strings.Builder
	for i := 0; i < len(glob); {
		switch {
		case strings.HasPrefix(glob[i:], "/**/"):
			b.WriteString("/(?:.*/)?")
			i += 4
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i += 2
		case glob[i] == '*':
			b.WriteString("[^/]*")
			i++
		default:
			j := i
			for j < len(glob) && glob[j] != '*' && !strings.HasPrefix(glob[j:], "/**/") {
				j++
			}
			b.WriteString(regexp.QuoteMeta(glob[i:j]))
			i = j
		}
	}
	return b.String(), nil
}

// ValidateGlob reports whether glob is a well-formed path glob of a rule.
func ValidateGlob(glob string) error {
	_, err := globExpr(glob)
	return err
}

// matches reports whether r matches the request q, whose path is in
// canonical form and whose query is parsed.
func (r *httpRule) matches(q *Request, path string, query map[string][]string) bool {
	if r.methods != nil && !slices.Contains(r.methods, q.Method) {
		return false
	}
	if !r.anyPath && !r.matchPath(path) {
		return false
	}
	return holds(r.query, query, r.deny) && holds(r.headers, q.Header, r.deny)
}

func (r *httpRule) matchPath(path string) bool {
	if r.paths != nil && r.paths.MatchString(path) {
		return true
	}
	for _, p := range r.prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// holds reports whether the request's values meet the conditions: for an
// allow rule each named value must be present and every one of its
// values listed; for a deny rule one listed value is enough. "*" lists
// any value. (A request that repeats a parameter must not slip a value
// past an allow rule, nor hide one from a deny rule.)
func holds(conds, have map[string][]string, deny bool) bool {
	for k, want := range conds {
		vs := have[k]
		if len(vs) == 0 {
			return false
		}
		any := slices.Contains(want, "*")
		if deny {
			if !any && !slices.ContainsFunc(vs, func(v string) bool { return slices.Contains(want, v) }) {
				return false
			}
			continue
		}
		if !any && slices.ContainsFunc(vs, func(v string) bool { return !slices.Contains(want, v) }) {
			return false
		}
	}
	return true
}
