package authoring

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/policy"
)

const examplesPolicy = `{
  "toolScopes": {"t": {
    "allow": [
      {"name": "pytest", "command": "pytest", "argPatterns": [["-v"]],
       "examples": {"match": [["pytest", "-v"]], "notMatch": [["pytest", "-v", "-x"], ["git", "push"]]}},
      {"name": "git", "command": "git", "argPatterns": [["log"]], "allowExtraArgs": true,
       "examples": {"match": [["git", "log", "--force"]]}}
    ],
    "deny": [{"name": "no-force", "command": "git", "argPatterns": [["log", "--force"]], "allowExtraArgs": true,
       "examples": {"match": [["git", "log", "--force", "-1"]], "notMatch": [["git", "log"]]}}]
  }},
  "egress": {"taskAllowlist": {"t": [
    {"host": "pypi.org:443", "examples": {"match": ["pypi.org:443", "GET https://pypi.org/simple/"], "notMatch": ["pypi.org:80", "pypi.org"]}},
    {"host": "api.github.com", "inspect": true, "rules": [{"name": "read", "methods": ["GET"]}],
     "examples": {"match": ["GET https://api.github.com/x"], "notMatch": ["PUT https://api.github.com/x", "evil.example:443"]}}
  ]}}
}`

// TestExamples checks each example's verdict: a match example must be
// decided by its rule (the deny rule takes git log --force from the
// allow rule that names it, so that one fails), a not-match example by
// anything else; an entry's must be allowed through it, or not.
func TestExamples(t *testing.T) {
	l := parse(t, "p.json", examplesPolicy)
	outs, err := Examples(l)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range outs {
		got = append(got, fmt.Sprintf("%s %v %s", o.Where, o.OK, o.What))
	}
	want := []string{
		"p.json:5:31 true pytest -v",
		"p.json:5:63 true pytest -v -x",
		"p.json:5:87 true git push",
		"p.json:7:31 false git log --force",
		"p.json:10:31 true git log --force -1",
		"p.json:10:78 true git log",
		"p.json:13:53 true pypi.org:443",
		"p.json:13:69 true GET https://pypi.org/simple/", // not inspected: carried unread
		"p.json:13:115 true pypi.org:80",
		"p.json:13:130 true pypi.org",
		"p.json:15:29 true GET https://api.github.com/x",
		"p.json:15:75 true PUT https://api.github.com/x",
		"p.json:15:107 true evil.example:443",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("outcomes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	n, err := CheckExamples(l)
	var errs policy.Errors
	if n != len(want) || !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("CheckExamples = %d, %v", n, err)
	}
	if e := errs[0].Error(); !strings.HasPrefix(e, `p.json:7:31: toolScopes.t.allow[1].examples.match[0]: example git log --force of tool t: want allow (git), the policy decides deny (no-force)`) ||
		!strings.Contains(e, `hint: "git" matched deny rule "no-force" of tool "t"`) {
		t.Errorf("error:\n%s", e)
	}
}

// TestExampleShape checks that loading refuses an example of the wrong
// shape, at its position.
func TestExampleShape(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{"toolScopes": {"t": {"allow": [{"name": "x", "command": "ls", "examples": {"match": [[]]}}]}}}`,
			`p.json:1:87: toolScopes.t.allow[0].examples.match[0]: an example is a command line`},
		{`{"toolScopes": {"t": {"allow": [{"name": "x", "command": "ls", "examples": {"match": [["ls", "a\u0000b"]]}}]}}}`,
			`p.json:1:87: toolScopes.t.allow[0].examples.match[0]: an argument has a NUL byte`},
		{`{"toolScopes": {}, "egress": {"taskAllowlist": {"t": [{"host": "x.org", "examples": {"match": ["FETCH https://x.org/"]}}]}}}`,
			`p.json:1:96: egress.taskAllowlist.t[0].examples.match[0]: example unknown method "FETCH"`},
		{`{"toolScopes": {}, "egress": {"taskAllowlist": {"t": [{"host": "x.org", "examples": {"notMatch": ["GET ftp://x.org/"]}}]}}}`,
			`p.json:1:99: egress.taskAllowlist.t[0].examples.notMatch[0]: example "ftp://x.org/" is not an absolute http or https URL`},
		{`{"toolScopes": {}, "egress": {"taskAllowlist": {"t": [{"host": "x.org", "examples": {"match": ["x..org"]}}]}}}`,
			`p.json:1:96: egress.taskAllowlist.t[0].examples.match[0]: example host "x..org": empty label`},
	} {
		_, err := policy.Parse("p.json", []byte(c.src))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\ngot  %v\nwant %s", c.src, err, c.want)
		}
	}
}

func TestCases(t *testing.T) {
	l := parse(t, "p.json", examplesPolicy)
	cases, err := ParseCases("c.txt", []byte(`# comment

allow tool:t pytest -v
deny  tool:t  pytest -v -x
deny tool:t git log --force
allow tool:t git log 'two words' "and \"more\"" $'tab\there' back\ slash
allow task:t GET https://api.github.com/repos
deny task:t PUT https://api.github.com/repos
deny task:t 169.254.169.254:80
allow tool:t pytest --pdb
`), l.Policy)
	if err != nil {
		t.Fatal(err)
	}
	if got := cases[3].Argv; strings.Join(got, "|") != `git|log|two words|and "more"|tab`+"\t"+`here|back slash` {
		t.Errorf("argv = %q", got)
	}
	outs, err := Cases(l, "c.txt", cases)
	if err != nil {
		t.Fatal(err)
	}
	var ok []bool
	for _, o := range outs {
		ok = append(ok, o.OK)
	}
	if fmt.Sprint(ok) != "[true true true true true true true false]" {
		t.Errorf("ok = %v: %+v", ok, outs)
	}
	if o := outs[7]; o.Where != "c.txt:10" || o.Want != "allow" || o.Got != decision.Deny.String() {
		t.Errorf("last = %+v", o)
	}
}

// TestCasesRefused checks that a line that could mean something else is
// an error naming its line: a shell would expand it, or it is not one
// command, or NAME is ambiguous.
func TestCasesRefused(t *testing.T) {
	l := parse(t, "p.json", examplesPolicy)
	for _, c := range []struct{ line, want string }{
		{"allow t", "want DECISION NAME WHAT"},
		{"permit t ls", `unknown verdict "permit"`},
		{"allow t ls", `"t" is both a tool and a task`},
		{"allow tool:t ls $HOME", "expansion"},
		{`allow tool:t ls "$HOME"`, "expansion inside"},
		{"allow tool:t ls *.go", "glob"},
		{"allow tool:t ls a?", "glob"},
		{"allow tool:t ls ~/x", "quote the word"},
		{"allow tool:t ls $(id)", "substitution"},
		{"allow tool:t ls; rm x", "one command"},
		{"allow tool:t ls | rm", "one simple command"},
		{"allow tool:t ls > out", "one simple command"},
		{"allow tool:t X=1 ls", "one simple command"},
		{"allow nobody ls", `"nobody" is neither a tool nor a task`},
		{"escalate task:t pypi.org", "escalate is the command gate's"},
		{"allow task:t GET ftp://x", "not an absolute http or https URL"},
		{"allow task:t x..org", "empty label"},
	} {
		_, err := ParseCases("c.txt", []byte("\n"+c.line+"\n"), l.Policy)
		if err == nil || !strings.HasPrefix(err.Error(), "c.txt:2: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want c.txt:2: ...%s", c.line, err, c.want)
		}
	}
	if _, err := ParseCases("c.txt", []byte("allow t \xff\n"), l.Policy); err == nil {
		t.Error("a file that is not UTF-8 parsed")
	}
}

func TestCasesQuotedGlob(t *testing.T) {
	l := parse(t, "p.json", examplesPolicy)
	cases, err := ParseCases("c.txt", []byte(`deny tool:t rm '*' \* "?"`), l.Policy)
	if err != nil || strings.Join(cases[0].Argv, " ") != "rm * * ?" {
		t.Fatalf("%+v %v", cases, err)
	}
}

// TestFullPolicyExamples: the policy that uses every field decides its
// own examples as they say, in both formats.
func TestFullPolicyExamples(t *testing.T) {
	for _, f := range []string{"../testdata/full.json", "../testdata/full.yaml"} {
		l, err := policy.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := CheckExamples(l); n != 2 || err != nil {
			t.Errorf("%s: %d examples, %v", f, n, err)
		}
	}
}

// TestExampleCredentialOverPlainHTTP: a request a credential is for is
// refused over plain HTTP, as the proxy refuses it.
func TestExampleCredentialOverPlainHTTP(t *testing.T) {
	l := parse(t, "p.json", `{"toolScopes": {}, "egress": {
  "taskAllowlist": {"t": [{"host": "api.github.com", "inspect": true,
    "examples": {"match": ["GET https://api.github.com/x"], "notMatch": ["GET http://api.github.com/x"]}}]},
  "credentials": [{"name": "gh", "host": "api.github.com", "scheme": "bearer", "fromEnv": "T"}]}}`)
	outs, err := Examples(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || !outs[0].OK || !outs[1].OK || !strings.Contains(outs[1].Reason, "sent over TLS only") {
		t.Errorf("%+v", outs)
	}
}
