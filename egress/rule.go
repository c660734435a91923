package egress

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// httpRule is a compiled RuleConfig.
type httpRule struct {
	name      string
	deny      bool
	methods   []string       // nil: any
	paths     *regexp.Regexp // the globs and prefixes as one anchored expression; nil: any path
	query     map[string][]string
	headers   map[string][]string // header names folded (FoldHeaderName)
	websocket bool
}

// compileRule checks and compiles one rule.
func compileRule(c RuleConfig) (*httpRule, error) {
	r := &httpRule{name: c.Name, deny: c.Deny, websocket: c.WebSocket}
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
	for _, p := range c.PathPrefixes {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("path prefix %q does not start with /", p)
		}
		alts = append(alts, regexp.QuoteMeta(p)+".*")
	}
	if len(alts) > 0 {
		// A deny rule matches without regard to case: Express, ASP.NET
		// and IIS route "/ADMIN" as "/admin" (Unicode folding, as .NET's
		// upper-casing reads "ſ" as "S"). An allow rule matches as written.
		flags := "(?s)"
		if c.Deny {
			flags = "(?si)"
		}
		r.paths = regexp.MustCompile(flags + "^(?:" + strings.Join(alts, "|") + ")$")
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

// conditions checks a map of names to values; header names are folded
// (FoldHeaderName).
func conditions(what string, m map[string][]string, header bool) (map[string][]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string][]string, len(m))
	spelt := map[string]string{} // folded name: as written
	for _, k := range slices.Sorted(maps.Keys(m)) {
		vs := m[k]
		switch {
		case k == "":
			return nil, fmt.Errorf("empty %s name", what)
		case len(vs) == 0:
			return nil, fmt.Errorf("%s %q lists no values (write [\"*\"] for any value)", what, k)
		}
		if header {
			if err := ValidateRuleHeader(k); err != nil {
				return nil, err
			}
			f := FoldHeaderName(k)
			if o, dup := spelt[f]; dup {
				return nil, fmt.Errorf("headers %q and %q are one header to servers (they read names without case, and \"_\" as \"-\")", o, k)
			}
			spelt[f], k = k, f
		}
		out[k] = vs
	}
	return out, nil
}

// ValidateRuleHeader reports whether a rule may name the header: an HTTP
// token, and a header the proxy forwards as the client sent it (not Host,
// a hop-by-hop header or a client's Forwarded or X-Forwarded-*, which the
// proxy removes or sets itself, so that no rule decides on a value the
// destination never sees).
func ValidateRuleHeader(name string) error {
	switch {
	case !httpguts.ValidHeaderFieldName(name): // an HTTP token (RFC 9110, 5.6.2)
		return fmt.Errorf("header name %q is not an HTTP token", name)
	case FoldHeaderName(name) == "host" || slices.ContainsFunc(hopByHop, func(h string) bool { return FoldHeaderName(h) == FoldHeaderName(name) }):
		return fmt.Errorf("header %q is not forwarded as the client sent it (the proxy removes or sets it), so no rule can decide on it", name)
	}
	return nil
}

// FoldHeaderName is a header name as servers compare it: without case,
// and with "_" read as "-", as CGI and WSGI servers do (both spellings
// become HTTP_X_DEBUG) and Go's and Node's do not; a rule decides on the
// reading that joins them.
func FoldHeaderName(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", "-"))
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
// canonical form, whose query is parsed and whose header names are folded.
func (r *httpRule) matches(q *Request, path string, query, header map[string][]string) bool {
	if r.methods != nil && !slices.Contains(r.methods, q.Method) {
		return false
	}
	return r.matchPath(path) && holds(r.query, query, r.deny, false) && holds(r.headers, header, r.deny, true)
}

// matchPath reports whether r's globs and prefixes match path. A deny
// rule also matches the path with or without a trailing "/", as Express,
// Spring (before 6) and ASP.NET route both alike.
func (r *httpRule) matchPath(path string) bool {
	switch {
	case r.paths == nil || r.paths.MatchString(path):
		return true
	case !r.deny:
		return false
	}
	if p, ok := strings.CutSuffix(path, "/"); ok {
		return p != "" && r.paths.MatchString(p)
	}
	return r.paths.MatchString(path + "/")
}

// holds reports whether the request's values meet the conditions: for an
// allow rule each named value must be present and every one of its
// values listed; for a deny rule one listed value is enough, and for a
// header one element of a comma-separated value too (a server reading
// "X-Debug: 0, 1" as a list sees 1). "*" lists any value. (A request that
// repeats a parameter must not slip a value past an allow rule, nor hide
// one from a deny rule.)
func holds(conds, have map[string][]string, deny, list bool) bool {
	for k, want := range conds {
		vs := have[k]
		if len(vs) == 0 {
			return false
		}
		any := slices.Contains(want, "*")
		if deny {
			if !any && !slices.ContainsFunc(vs, func(v string) bool { return listed(want, v, list) }) {
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

// listed reports whether want holds v, or, for a list, one of v's
// comma-separated elements.
func listed(want []string, v string, list bool) bool {
	if slices.Contains(want, v) {
		return true
	}
	if list {
		for e := range strings.SplitSeq(v, ",") {
			if slices.Contains(want, strings.TrimSpace(e)) {
				return true
			}
		}
	}
	return false
}
