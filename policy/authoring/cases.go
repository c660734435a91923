package authoring

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/internal/termtext"
	"github.com/airlock-sandbox/airlock/policy"
)

// MaxCasesSize bounds a cases file, as policy.MaxSize bounds a policy.
const MaxCasesSize = policy.MaxSize

// Case is one line of a cases file (docs/policy.md, "Test cases"):
//
//	DECISION NAME WHAT
//
// DECISION is allow, deny or escalate. NAME is a tool or a task of the
// policy, written tool:NAME or task:NAME where the policy has both (or
// neither). For a tool, WHAT is a command line, words as a shell reads
// them (quotes and backslashes, no expansions); for a task, a destination
// HOST[:PORT] or a request "METHOD URL", as an entry's examples are.
type Case struct {
	// Line is the case's line in its file.
	Line int
	// Want is the decision the case expects.
	Want decision.Verdict
	// Tool and Argv are a command case's; Task and Example an egress
	// case's.
	Tool    string
	Argv    []string
	Task    string
	Example policy.EntryExample
	// What is WHAT as written.
	What string
}

// ParseCases reads a cases file named name for the policy p, whose tool
// and task names NAME is resolved against. An error names the file and
// line.
func ParseCases(name string, data []byte, p *policy.Policy) ([]Case, error) {
	if len(data) > MaxCasesSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxCasesSize)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not UTF-8 text", name)
	}
	var cases []Case
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, MaxCasesSize+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c, err := parseCase(line, p)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		c.Line = n
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cases, nil
}

func parseCase(line string, p *policy.Policy) (Case, error) {
	fields := strings.Fields(line)
	if len(fields) < 3 {
		return Case{}, errors.New("want DECISION NAME WHAT: allow, deny or escalate; a tool or a task; a command line, a HOST[:PORT] or METHOD URL")
	}
	var c Case
	if err := c.Want.UnmarshalText([]byte(fields[0])); err != nil {
		return Case{}, err
	}
	rest := strings.TrimSpace(line[len(fields[0]):])
	rest = strings.TrimSpace(rest[len(fields[1]):])
	c.What = rest
	kind, name, err := caseSubject(fields[1], p)
	if err != nil {
		return Case{}, err
	}
	if kind == "tool" {
		c.Tool = name
		c.Argv, err = shellWords(rest)
		return c, err
	}
	if c.Want == decision.Escalate {
		return Case{}, errors.New("escalate is the command gate's: an egress case is allow or deny")
	}
	c.Task = name
	c.Example, err = policy.ParseEntryExample(strings.Join(strings.Fields(rest), " "))
	return c, err
}

// caseSubject resolves NAME: tool:X, task:X, or X when the policy has a
// tool or a task of that name but not both.
func caseSubject(s string, p *policy.Policy) (kind, name string, err error) {
	if k, n, ok := strings.Cut(s, ":"); ok && (k == "tool" || k == "task") && n != "" {
		return k, n, nil
	}
	_, tool := p.ToolScopes[s]
	_, task := p.EgressConfig().TaskAllowlist[s]
	switch {
	case tool && task:
		return "", "", fmt.Errorf("%q is both a tool and a task of the policy: write tool:%s or task:%s", s, s, s)
	case tool:
		return "tool", s, nil
	case task:
		return "task", s, nil
	}
	return "", "", fmt.Errorf("%q is neither a tool nor a task of the policy: write tool:%s or task:%s", s, s, s)
}

// shellWords splits a command line into words as a shell reads them:
// quotes (”, "", $”) and backslashes, nothing expanded. Anything a
// shell would expand or treat as more than one simple command is an
// error, so that a case means what it says.
func shellWords(s string) ([]string, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(s), "")
	if err != nil {
		return nil, fmt.Errorf("command line: %w", err)
	}
	if len(f.Stmts) != 1 {
		return nil, errors.New("command line: write one command, no ; or newline")
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, errors.New("command line: write one simple command: words only, no redirection, pipe or assignment")
	}
	for _, w := range call.Args {
		if err := literalWord(w); err != nil {
			return nil, err
		}
	}
	words, err := expand.Fields(&expand.Config{Env: expand.ListEnviron()}, call.Args...)
	if err != nil || len(words) != len(call.Args) {
		return nil, fmt.Errorf("command line: %q does not read as %d words", s, len(call.Args))
	}
	return words, nil
}

// literalWord refuses a word with anything but plain text and quotes:
// an expansion, a substitution, a glob would be the shell's, not the
// case's. A leading unquoted ~ would be a home directory.
func literalWord(w *syntax.Word) error {
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(x.Value, "~") {
				return fmt.Errorf("command line: quote the word %q: a shell would expand ~", x.Value)
			}
			for j := 0; j < len(x.Value); j++ {
				switch x.Value[j] {
				case '\\':
					j++
				case '*', '?', '[':
					return fmt.Errorf("command line: quote the word %q: a shell would expand it as a glob", x.Value)
				}
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return errors.New(`command line: an expansion inside "": write the value, or quote with ''`)
				}
			}
		default:
			return errors.New("command line: a word with an expansion, a substitution or a glob: quote it with ''")
		}
	}
	return nil
}

// Cases decides each case with the policy l's gates: a command case's
// verdict must be Want; an egress case must be allowed (a request by its
// inspected entry's rules too) or refused, as Want says. name is the
// cases file's, for each outcome's place.
func Cases(l *policy.Loaded, name string, cases []Case) ([]Outcome, error) {
	d, err := newDecider(l.Policy, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Source, err)
	}
	out := make([]Outcome, len(cases))
	for i, c := range cases {
		o := Outcome{Where: fmt.Sprintf("%s:%d", name, c.Line), Want: c.Want.String()}
		if c.Tool != "" {
			dec := d.command(c.Tool, c.Argv)
			o.Subject, o.What, o.Got, o.Reason = "tool "+c.Tool, termtext.Argv(c.Argv), shown(dec), dec.Why()
			o.OK = dec.Verdict == c.Want
		} else {
			_, req := d.request(c.Task, c.Example)
			o.Subject, o.What, o.Got, o.Reason = "task "+c.Task, termtext.Escape(c.What), shown(req), req.Why()
			o.OK = req.Verdict == c.Want
		}
		out[i] = o
	}
	return out, nil
}
