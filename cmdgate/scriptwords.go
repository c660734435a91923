package cmdgate

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// data checks that the shell computes x without running anything: no
// command or process substitution, no arithmetic (which evaluates
// variables' values, a[$(...)] included), no expansion that assigns,
// reads a variable named by another's value or runs a value as a prompt.
// It refuses each such construct where it is, and reports whether x had
// none.
func (w *walker) data(x *syntax.Word) bool {
	if x == nil {
		return true
	}
	clean := true
	syntax.Walk(x, func(n syntax.Node) bool {
		construct, why := refusedPart(n)
		if construct == "" {
			return true
		}
		w.refuse(n.Pos(), construct, why)
		clean = false
		return false
	})
	return clean
}

// refusedPart names a part of a word the gate refuses, and why; "" when
// it accepts it.
func refusedPart(n syntax.Node) (construct, why string) {
	const arith = "its subscript or offset is arithmetic, which evaluates variables' values as expressions and can run commands"
	switch p := n.(type) {
	case *syntax.CmdSubst:
		if p.Backquotes {
			return "`...`", "a command substitution: its output is not known before the script runs"
		}
		return "$(...)", "a command substitution: its output is not known before the script runs"
	case *syntax.ProcSubst:
		return p.Op.String() + "...)", "a process substitution runs commands of its own"
	case *syntax.ArithmExp:
		return "$((...))", "arithmetic evaluates variables' values as expressions, which can run commands (a[$(...)])"
	case *syntax.ParamExp:
		switch {
		case p.Excl || p.Names != 0:
			return "${!...}", "an indirect expansion reads a variable named by another's value, subscripts and all"
		case p.Index != nil || p.Slice != nil:
			return "${...[...]}", arith
		case p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull):
			return "${...=...}", "an expansion that assigns a variable"
		case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
			return "${...@...}", "an @ operator can expand a value as a prompt, which runs its command substitutions"
		case p.Width || p.IsSet || p.Flags != nil || p.NestedParam != nil || len(p.Modifiers) > 0 ||
			p.Split != syntax.OptUnset || p.GlobSubst != syntax.OptUnset || p.RcExpand != syntax.OptUnset:
			return "${...}", "an expansion airlock does not read"
		}
	}
	return "", ""
}

// word is x as the gate knows it before the script runs: its value when
// the text alone gives it (literal text, escapes and quotes), else
// unknown, with its text as written, and its pattern when it is a glob
// and nothing else.
func (w *walker) word(x *syntax.Word) word {
	v, pattern, ok := w.literal(x)
	if !ok {
		return word{text: source(x), glob: pattern, pos: pos(x.Pos())}
	}
	return word{text: v, known: true, pos: pos(x.Pos())}
}

// literal is the value of x when it holds no expansion: unquoted text
// without a glob character, a leading ~, a lone $ or a brace (bash, and
// a sh that is bash, expand {a,b}: it is unknown in every dialect);
// single quotes; double quotes around text. Escapes are taken out as the
// shell takes them out. A word that is unknown only for its glob
// characters has its pattern (path.Match's syntax) instead.
func (w *walker) literal(x *syntax.Word) (value, pattern string, ok bool) {
	var v, pat strings.Builder
	glob := false
	closes := strings.Contains(source(x), "]") // else a [ is literal, as in the shell
	for i, part := range x.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return "", "", false
			}
			g, plain := unescape(&v, &pat, p.Value, closes)
			if !plain {
				return "", "", false
			}
			glob = glob || g
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", "", false
			}
			v.WriteString(p.Value)
			quoteGlob(&pat, p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", "", false
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "", "", false
				}
				var b strings.Builder
				unescapeQuoted(&b, lit.Value)
				v.WriteString(b.String())
				quoteGlob(&pat, b.String())
			}
		default:
			return "", "", false
		}
	}
	if glob {
		return "", pat.String(), false
	}
	return v.String(), "", true
}

// unescape writes an unquoted literal's value to v and its pattern to
// pat: a backslash takes the next byte as it is. glob says it has an
// unescaped glob character (* ?, and [ when closes: a ] follows in the
// word); plain is false for an unescaped $ or brace (brace expansion):
// words that may expand to anything.
func unescape(v, pat *strings.Builder, s string, closes bool) (glob, plain bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			v.WriteByte(s[i])
			quoteGlob(pat, s[i:i+1])
		case c == '$' || c == '{' || c == '}':
			return glob, false
		case c == '*' || c == '?' || c == '[' && closes:
			glob = true
			pat.WriteByte(c)
		default:
			v.WriteByte(c)
			quoteGlob(pat, s[i:i+1])
		}
	}
	return glob, true
}

// quoteGlob writes s to a pattern as literal text.
func quoteGlob(pat *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[\`, s[i]) >= 0 {
			pat.WriteByte('\\')
		}
		pat.WriteByte(s[i])
	}
}

// unescapeQuoted writes a double-quoted literal's value: a backslash
// escapes only $, `, ", \ and a newline.
func unescapeQuoted(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
}

// unknownKind says what makes a word unknown, for a refusal.
func unknownKind(x *syntax.Word) string {
	for i, part := range x.Parts {
		switch p := part.(type) {
		case *syntax.ParamExp:
			return "a variable"
		case *syntax.ExtGlob:
			return "a glob"
		case *syntax.SglQuoted, *syntax.DblQuoted:
			if q, ok := p.(*syntax.DblQuoted); ok {
				for _, qp := range q.Parts {
					if _, ok := qp.(*syntax.ParamExp); ok {
						return "a variable"
					}
				}
			}
			continue
		case *syntax.Lit:
			switch {
			case i == 0 && strings.HasPrefix(p.Value, "~"):
				return "a ~"
			case strings.ContainsAny(p.Value, "{}"):
				return "a brace expansion or a glob"
			case strings.ContainsAny(p.Value, "*?["):
				return "a glob"
			}
		}
	}
	return "a quoting the shell expands"
}

// source is x's text as written in the script.
func source(x *syntax.Word) string {
	var b strings.Builder
	syntax.NewPrinter().Print(&b, x)
	return b.String()
}
