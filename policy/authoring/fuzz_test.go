package authoring

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
)

// fuzzPolicies are the policies the fuzzers suggest additions to: one in
// each format, with an inspected entry and a credential.
var fuzzPolicies = map[bool]string{
	false: `{"toolScopes": {"t": {"allow": [{"name": "ls", "command": "ls"}], "deny": [{"name": "no-rm", "command": "rm", "allowExtraArgs": true}]}},
 "egress": {"taskAllowlist": {"t": [{"host": "api.github.com", "inspect": true, "rules": [{"name": "read", "methods": ["GET"], "paths": ["/repos/**"]}]}]},
  "credentials": [{"name": "gh", "host": "api.github.com", "scheme": "bearer", "fromEnv": "T"}]}}`,
	true: "# yaml\ntoolScopes:\n  t: {allow: [{name: ls, command: ls}], deny: [{name: no-rm, command: rm, allowExtraArgs: true}]}\n" +
		"egress:\n  taskAllowlist:\n    t:\n      - {host: api.github.com, inspect: true, rules: [{name: read, methods: [GET], paths: ['/repos/**']}]}\n" +
		"  credentials: [{name: gh, host: api.github.com, scheme: bearer, fromEnv: T}]\n",
}

// safeKinds are the widenings a suggestion may make: never a dropped
// deny rule, escalation, inspection, block or require, never a wider
// credential, filesystem or search path.
var safeKinds = []string{KindNewTool, KindNewCommand, KindShellRule, KindWorkspaceProgram, KindWiderSignature,
	KindNewHost, KindNewWildcard, KindPrivateReach, KindNewMethod, KindNewPath, KindCapRaised, KindBudgetRaised}

// checkSuggested checks what Suggest proposed for records under p: the
// changed policy loads and widens only in safe kinds, no command line is
// allowed with an argument more than it was refused with, no entry is a
// floor destination or a wildcard unless three siblings were refused,
// and the answer encodes as JSON with nothing a terminal would act on in
// what it says.
func checkSuggested(t *testing.T, p *policy.Loaded, records []audit.Event, got *Suggested) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil || !json.Valid(b) {
		t.Fatalf("the suggestions do not encode: %v", err)
	}
	for _, l := range got.LeftOut {
		for _, s := range []string{l.Subject, l.Why} {
			if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0 {
				t.Fatalf("left out says %q", s)
			}
		}
	}
	if got.Policy == nil {
		if len(got.Suggestions) > 0 {
			t.Fatal("suggestions without a policy")
		}
		return
	}
	np, err := policy.Parse(p.Source, got.Policy)
	if err != nil {
		t.Fatalf("the changed policy does not load: %v\n%s", err, got.Policy)
	}
	if _, err := CheckExamples(np); err != nil {
		t.Fatalf("its examples fail: %v", err)
	}
	d, err := Diff(p.Policy, np.Policy)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Widens {
		if !slices.Contains(safeKinds, c.Kind) {
			t.Fatalf("a suggestion widens by %s: %+v", c.Kind, c)
		}
	}
	if len(d.Narrows) > 0 {
		t.Fatalf("a suggestion narrows: %+v", d.Narrows)
	}
	dec, err := newDecider(np.Policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	siblings := 0
	for _, ev := range records {
		if c := ev.Context; ev.Kind == audit.KindCommand {
			if argv := append([]string{c.Command}, c.Args...); dec.command(c.Tool, append(argv, "one-more")).Allowed() {
				t.Fatalf("%q is allowed with one more argument", argv)
			}
		}
		if ev.Kind == audit.KindEgress && ev.Context.Protocol != protocolInspected {
			siblings++
		}
	}
	for _, e := range np.Egress.TaskAllowlist["t"] {
		pe, err := egress.ParseEntry(e.Host)
		if err != nil || egress.IsAlwaysBlockedEntry(e.Host) || egress.IsAlwaysBlockedName(strings.TrimPrefix(pe.Name, "*.")) {
			t.Fatalf("entry %q: %v", e.Host, err)
		}
		if (pe.Kind == egress.EntrySuffix && siblings < minShared) || pe.Kind == egress.EntryAny ||
			(pe.Kind == egress.EntryPrefix && !pe.Prefix.IsSingleIP()) {
			t.Fatalf("entry %q is wider than the refusals", e.Host)
		}
	}
}

// FuzzSuggest proposes additions for refusals whose strings the agent
// chose: a command line, a destination, a request.
func FuzzSuggest(f *testing.F) {
	f.Add(false, "t", "pytest", "-v", "pypi.org", uint16(443), "GET", "/orgs/acme")
	f.Add(true, "t", "rm", "*", "*.evil.example", uint16(80), "POST", "/repos/../x")
	f.Add(true, "t", "echo", "a\nb\u202e", "169.254.169.254", uint16(80), "GET", "/a*b")
	f.Add(false, "tool name", "/workspace/x", "'; rm -rf /", "0251.0376.0251.0376", uint16(80), "CONNECT", "/%2e%2e/")
	f.Add(true, "t", "sh", "-c", "10.0.0.1", uint16(5432), "DELETE", "/x?y=1")
	f.Add(false, "t", "git", "\xff\xfe", "xn--e1afmkfd.xn--p1ai", uint16(443), "GET", "/\u00e9t\u00e9")
	f.Add(true, "t", "ls", "-a", "127.0.0.1", uint16(8080), "GET", "/repos/x")
	f.Add(true, "t", "python3", "- {x: 1}", "a.b.c.d", uint16(1), "PUT", "/#x")
	f.Fuzz(func(t *testing.T, yaml bool, tool, command, arg, host string, port uint16, method, path string) {
		name := "p.json"
		if yaml {
			name = "p.yaml"
		}
		p := parse(t, name, fuzzPolicies[yaml])
		records := []audit.Event{
			cmdDeny(2, tool, command, arg),
			cmdDeny(3, tool, command),
			hostDeny(4, "t", host, port),
			requestDeny(5, "api.github.com", method, path),
			hostDeny(6, "t", "a."+host, port), hostDeny(7, "t", "b."+host, port), hostDeny(8, "t", "c."+host, port),
		}
		got, err := Suggest(p, records, Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkSuggested(t, p, records, got)
	})
}

// FuzzSuggestLines reads audit lines (each a record as the log holds
// it, the strings the agent chose in either of its forms) and proposes
// additions for what they refused.
func FuzzSuggestLines(f *testing.F) {
	p := parse(f, "p.json", fuzzPolicies[false])
	path := filepath.Join(f.TempDir(), "seed.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	for _, ev := range []audit.Event{
		cmdDeny(0, "t", "cat", "\xff/etc/shadow"),
		cmdDeny(0, "t", "make", "test", strings.Repeat("x", 70_000)),
		hostDeny(0, "t", "\xfe\xffevil.test", 443),
		hostDeny(0, "t", "metadata.google.internal", 80),
		requestDeny(0, "api.github.com", "GET", "/orgs/\u202e"),
		kill(0, "t", "memory", audit.Context{PeakMemoryBytes: 600 << 20}),
		budgetReached(0, "task t", "requests", ""),
	} {
		ev.Seq = 0
		if _, err := l.Append(ev); err != nil {
			f.Fatal(err)
		}
	}
	l.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := audit.ParseLine(line)
		if err != nil {
			return
		}
		ev.Seq = 2
		if !refusal(ev) {
			return
		}
		records := []audit.Event{ev}
		got, err := Suggest(p, records, Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkSuggested(t, p, records, got)
	})
}
