package policy

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/internal/strict"
)

// CommandExamples are a command rule's examples, as Codex's execpolicy
// has them: command lines, each the command and then its arguments.
// Loading checks their shape; policy check and policy test ask the
// command gate to decide each (package policy/authoring).
type CommandExamples struct {
	// Match are command lines this rule decides: the tool's decision on
	// each is the rule's verdict, taken by this rule.
	Match [][]string `json:"match,omitempty"`
	// NotMatch are command lines this rule does not decide.
	NotMatch [][]string `json:"notMatch,omitempty"`
}

// EntryExamples are an allowlist entry's examples: each a destination,
// "HOST[:PORT]" (without a port, only entries without one match), or a
// request, "METHOD URL" (an absolute http or https URL).
type EntryExamples struct {
	// Match are destinations this entry allows (and requests it allows,
	// by its rules when it is inspected).
	Match []string `json:"match,omitempty"`
	// NotMatch are destinations and requests this entry does not allow.
	NotMatch []string `json:"notMatch,omitempty"`
}

// maxExamples bounds each list of examples: they are tests, written by
// hand or by policy suggest, never thousands.
const maxExamples = 1000

// EntryExample is one example of an allowlist entry, parsed.
type EntryExample struct {
	// HostPort is the destination, as the egress gate reads one
	// (egress.SplitHostPort with no default port).
	HostPort string
	// Method and URL are set for a request example; HostPort is then the
	// URL's host.
	Method string
	URL    *url.URL
}

// DefaultPort is the port of the example's destination when HostPort
// names none: its URL's scheme's, or 0 for a destination example.
func (x EntryExample) DefaultPort() uint16 {
	switch {
	case x.URL == nil:
		return 0
	case x.URL.Scheme == "https":
		return 443
	}
	return 80
}

// ParseEntryExample parses an allowlist entry's example: "HOST[:PORT]",
// or "METHOD URL" with a method of egress.KnownMethods and an absolute
// http or https URL.
func ParseEntryExample(s string) (EntryExample, error) {
	method, rawURL, isRequest := strings.Cut(s, " ")
	if !isRequest {
		if _, err := egress.SplitHostPort(s, 0); err != nil {
			return EntryExample{}, err
		}
		return EntryExample{HostPort: s}, nil
	}
	if !slices.Contains(egress.KnownMethods, method) {
		return EntryExample{}, fmt.Errorf("unknown method %q (known, in upper case: %s)", method, strings.Join(egress.KnownMethods, ", "))
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return EntryExample{}, fmt.Errorf("%q is not an absolute http or https URL without user or fragment", rawURL)
	}
	if _, err := egress.SplitHostPort(u.Host, 0); err != nil {
		return EntryExample{}, err
	}
	return EntryExample{HostPort: u.Host, Method: method, URL: u}, nil
}

// checkExamples checks the shape of every example; what the gates decide
// on them is package policy/authoring's to check.
func checkExamples(p *Policy) []*Error {
	var errs []*Error
	p.EachRule(func(_, _, at string, r CommandPattern) {
		if r.Examples != nil {
			errs = append(errs, checkCommandExamples(at+".examples.match", r.Examples.Match)...)
			errs = append(errs, checkCommandExamples(at+".examples.notMatch", r.Examples.NotMatch)...)
		}
	})
	if p.Egress == nil {
		return errs
	}
	for _, task := range sortedKeys(p.Egress.TaskAllowlist) {
		for i, e := range p.Egress.TaskAllowlist[task] {
			if e.Examples != nil {
				at := strict.Index(strict.Field("egress.taskAllowlist", task), i) + ".examples"
				errs = append(errs, checkEntryExamples(at+".match", e.Examples.Match)...)
				errs = append(errs, checkEntryExamples(at+".notMatch", e.Examples.NotMatch)...)
			}
		}
	}
	return errs
}

func checkCommandExamples(at string, argvs [][]string) []*Error {
	if len(argvs) > maxExamples {
		return []*Error{strict.Problem(at, fmt.Sprintf("more than %d examples", maxExamples), "")}
	}
	var errs []*Error
	for i, argv := range argvs {
		switch {
		case len(argv) == 0 || argv[0] == "":
			errs = append(errs, strict.Problem(strict.Index(at, i), "an example is a command line: the command, then its arguments",
				`write e.g. ["pytest", "-v"]`))
		case slices.ContainsFunc(argv, func(a string) bool { return strings.IndexByte(a, 0) >= 0 || !utf8.ValidString(a) }):
			errs = append(errs, strict.Problem(strict.Index(at, i), "an argument has a NUL byte or invalid UTF-8", ""))
		}
	}
	return errs
}

func checkEntryExamples(at string, examples []string) []*Error {
	if len(examples) > maxExamples {
		return []*Error{strict.Problem(at, fmt.Sprintf("more than %d examples", maxExamples), "")}
	}
	var errs []*Error
	for i, s := range examples {
		if _, err := ParseEntryExample(s); err != nil {
			var he *egress.HostError
			msg := err.Error()
			if errors.As(err, &he) {
				msg = fmt.Sprintf("host %q: %s", he.Host, he.Cause)
			}
			errs = append(errs, strict.Problem(strict.Index(at, i), "example "+msg,
				`write a destination ("pypi.org:443") or a request ("GET https://pypi.org/simple/")`))
		}
	}
	return errs
}
