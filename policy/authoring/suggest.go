package authoring

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/policy"
)

// Options are Suggest's choices.
type Options struct {
	// Exact keeps every command signature an exact command line: no
	// common prefix of several is proposed.
	Exact bool
}

// Record names an audit record a suggestion comes from.
type Record struct {
	Seq   uint64 `json:"seq"`
	RunID string `json:"runId,omitempty"`
}

// Records are the records of a suggestion, in the log's order.
type Records []Record

// String names records by seq: "12, 15, 16 and 3 more".
func (recs Records) String() string {
	var b strings.Builder
	for i, r := range recs {
		if i == maxListed {
			fmt.Fprintf(&b, " and %d more", len(recs)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, r.Seq)
	}
	return b.String()
}

// Suggestion is one addition to a policy, with the records it comes from
// and what a reviewer should weigh.
type Suggestion struct {
	// Kind is what it adds: "command" (a command rule), "host" or
	// "wildcard" (an allowlist entry), "request" (a rule of an inspected
	// entry), "cap" or "budget" (a raised cap).
	Kind string `json:"kind"`
	// Field is where in the policy it adds, as a field path
	// ("toolScopes.ci.allow", "egress.taskAllowlist.ci").
	Field string `json:"field"`
	// Summary says what it allows, in one line.
	Summary string `json:"summary"`
	// Rule, Entry and Request are the command rule, the allowlist entry
	// and the inspected entry's rule it adds.
	Rule    *policy.CommandPattern `json:"rule,omitempty"`
	Entry   *policy.AllowEntry     `json:"entry,omitempty"`
	Request *policy.HTTPRule       `json:"request,omitempty"`
	// From and To are a raised cap's values; Peak what the records say
	// the run reached, when they say.
	From *float64 `json:"from,omitempty"`
	To   *float64 `json:"to,omitempty"`
	Peak string   `json:"peak,omitempty"`
	// Risks are plain notes for the reviewer: a shell, a wildcard, a
	// private or loopback address, a credentialed host, a cap past its
	// default.
	Risks []string `json:"risks,omitempty"`
	// Records are the audit records it comes from.
	Records Records `json:"records"`

	apply  func(*document, *policy.Loaded) error // adds it to a document
	checks []check                               // what must be allowed once it is added
}

// check is one record's decision under the changed policy l, whose
// gates d are: "" when it is allowed, else why not.
type check func(l *policy.Loaded, d *decider) string

// LeftOut is a refusal Suggest proposes nothing for, and why.
type LeftOut struct {
	// Subject is what was refused, escaped for a terminal.
	Subject string `json:"subject"`
	// Why says why nothing is proposed.
	Why string `json:"why"`
	// Records are the audit records of such refusals.
	Records Records `json:"records"`
}

// Suggested is Suggest's answer.
type Suggested struct {
	// Policy is the changed policy, in the format it was read in; nil
	// when nothing is suggested.
	Policy []byte `json:"-"`
	// Suggestions are what was added, in the order of their first record.
	Suggestions []Suggestion `json:"suggestions"`
	// LeftOut are the refusals nothing was proposed for.
	LeftOut []LeftOut `json:"leftOut"`
}

// Suggest proposes the smallest additions to the policy l that would have
// allowed what the records refused (ReadLog's): command rules of exact
// command lines (or the common prefix of several, unless opts.Exact),
// allowlist entries of exact hosts and ports (a wildcard only for several
// siblings), rules of exact methods and paths on inspected entries, and
// raised caps and budgets. Each suggestion is added to a copy of the
// policy, which must load as policy check loads it and whose gates must
// then allow each of its records and decide every example as it says;
// one that does not is left out, with why. The policy's own examples
// must pass first.
func Suggest(l *policy.Loaded, records []audit.Event, opts Options) (*Suggested, error) {
	if _, err := CheckExamples(l); err != nil {
		return nil, fmt.Errorf("the policy's own examples fail; fix them first:\n%w", err)
	}
	d, err := newDecider(l.Policy, nil)
	if err != nil {
		return nil, err
	}
	s := &suggester{pol: l, d: d, opts: opts, left: map[string]*LeftOut{}}
	for _, ev := range records {
		s.read(ev)
	}
	cands := s.candidates()
	slices.SortStableFunc(cands, func(a, b *Suggestion) int { return cmp.Compare(a.Records[0].Seq, b.Records[0].Seq) })

	doc, err := parseDocument(l.Source, l.Data)
	if err != nil {
		return nil, err
	}
	out := &Suggested{Suggestions: []Suggestion{}, LeftOut: []LeftOut{}}
	cur := l
	for _, c := range cands {
		next, nl, why := s.try(doc, cur, c)
		if why != "" {
			s.leave(c.Summary, why, c.Records...)
			continue
		}
		doc, cur = next, nl
		out.Suggestions = append(out.Suggestions, *c)
	}
	if len(out.Suggestions) > 0 {
		out.Policy = cur.Data
	}
	for _, k := range s.leftOrder {
		out.LeftOut = append(out.LeftOut, *s.left[k])
	}
	return out, nil
}

// try adds c to a copy of doc and checks the result: it must load, its
// examples must pass, and its gates must allow c's records. It returns
// the changed document and policy, or why c is left out.
func (s *suggester) try(doc *document, cur *policy.Loaded, c *Suggestion) (*document, *policy.Loaded, string) {
	next := doc.clone()
	if err := c.apply(next, cur); err != nil {
		return nil, nil, "it cannot be added to this policy: " + err.Error()
	}
	data, err := next.bytes()
	if err != nil {
		return nil, nil, "it cannot be written: " + err.Error()
	}
	nl, err := policy.Parse(cur.Source, data)
	if err != nil {
		return nil, nil, "the policy with it does not load: " + firstLine(err.Error())
	}
	if !next.readsBack(nl) {
		return nil, nil, "the YAML encoder does not write it so that it reads back as it is"
	}
	if _, err := CheckExamples(nl); err != nil {
		return nil, nil, "an example fails with it: " + firstLine(err.Error())
	}
	nd, err := newDecider(nl.Policy, nil)
	if err != nil {
		return nil, nil, err.Error()
	}
	for _, ck := range c.checks {
		if why := ck(nl, nd); why != "" {
			return nil, nil, "the changed policy still refuses it: " + why
		}
	}
	return next, nl, ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// suggester gathers the records into groups, each of which becomes a
// suggestion.
type suggester struct {
	pol  *policy.Loaded
	d    *decider
	opts Options

	commands groups[commandKey, commandRefusal]
	hosts    groups[string, hostRefusal] // by task
	requests groups[requestKey, requestRefusal]
	caps     groups[capKey, audit.Event]
	budgets  groups[budgetKey, audit.Event]

	left      map[string]*LeftOut
	leftOrder []string
}

// groups keeps items by key, in the order keys were first seen.
type groups[K comparable, V any] struct {
	keys []K
	m    map[K][]V
}

func (g *groups[K, V]) add(k K, v V) {
	if g.m == nil {
		g.m = map[K][]V{}
	}
	if _, ok := g.m[k]; !ok {
		g.keys = append(g.keys, k)
	}
	g.m[k] = append(g.m[k], v)
}

// leave records that nothing is proposed for subject, merging refusals
// of one subject left out for one reason.
func (s *suggester) leave(subject, why string, recs ...Record) {
	k := subject + "\x00" + why
	lo := s.left[k]
	if lo == nil {
		lo = &LeftOut{Subject: subject, Why: why}
		s.left[k] = lo
		s.leftOrder = append(s.leftOrder, k)
	}
	lo.Records = append(lo.Records, recs...)
}

func recordOf(ev audit.Event) Record { return Record{Seq: ev.Seq, RunID: ev.Context.RunID} }

func sortRecords(recs []Record) {
	slices.SortFunc(recs, func(a, b Record) int { return cmp.Compare(a.Seq, b.Seq) })
}

// read sorts one record into its group, or leaves it out.
func (s *suggester) read(ev audit.Event) {
	switch ev.Kind {
	case audit.KindCommand:
		s.readCommand(ev)
	case audit.KindEgress:
		s.readEgress(ev)
	case audit.KindResource:
		s.readKill(ev)
	}
}

// candidates turns the groups into suggestions.
func (s *suggester) candidates() []*Suggestion {
	var out []*Suggestion
	out = append(out, s.commandSuggestions()...)
	out = append(out, s.hostSuggestions()...)
	out = append(out, s.requestSuggestions()...)
	out = append(out, s.capSuggestions()...)
	out = append(out, s.budgetSuggestions()...)
	return out
}

// maxListed bounds the records a justification or a comment names, and
// the examples a suggestion writes.
const maxListed = 8

// comment is the YAML comment above an addition: its records and risks.
func comment(c *Suggestion) string {
	var b strings.Builder
	fmt.Fprintf(&b, "suggested by airlock policy suggest from audit records %s", c.Records)
	for _, r := range c.Risks {
		b.WriteString("\nrisk: " + r)
	}
	return b.String()
}

// appendTo appends v, with c's comment in YAML, to the list at key of
// the object m, adding the list when there is none.
func appendTo(m *yaml.Node, key string, v any, c *Suggestion) error {
	list, err := ensure(m, key, yaml.SequenceNode)
	if err != nil {
		return err
	}
	n, err := valueNode(v)
	if err != nil {
		return err
	}
	n.HeadComment = comment(c)
	list.Content = append(list.Content, n)
	return nil
}
