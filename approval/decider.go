package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/internal/strict"
	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// The decider's bounds (docs/approvals.md, "The decider").
const (
	// DefaultDeciderTimeout is how long a decider may take when the
	// policy does not say; MaxDeciderTimeout is the longest it may be given.
	DefaultDeciderTimeout = 30 * time.Second
	MaxDeciderTimeout     = time.Hour
	// DeciderProtocol is the version of the decider's input, sent in its
	// "version" field: 2 since a request binds the program, environment,
	// working directory, stdin, task, workspace and image too.
	DeciderProtocol = 2
	// maxDeciderOutput caps what is read from the decider's stdout; a
	// decider that writes more is killed. maxDeciderReason caps its reason.
	maxDeciderOutput = 16 << 10
	maxDeciderReason = 1 << 10
)

// Decider is an Approver that asks an external program, run outside the
// sandbox: the request goes to its stdin as one JSON object, and it
// answers one JSON object on stdout, {"decision":"allow"|"deny","reason":"…"},
// and exits 0. Anything else — a timeout, a crash, a non-zero exit,
// output that is malformed, oversized or has other fields — is a denial
// whose reason says what went wrong; never an approval. The program runs
// in its own process group with a minimal environment (PATH and HOME) in
// "/", and the whole group is killed when it answers, fails or times out.
type Decider struct {
	// Argv is the program, an absolute path, and its arguments.
	Argv []string
	// Timeout bounds the program's run; 0 means DefaultDeciderTimeout.
	Timeout time.Duration
}

// deciderInput is what the decider reads: the request and the protocol's
// version.
type deciderInput struct {
	Version int `json:"version"`
	Request
}

// deciderAnswer is the only thing a decider may write.
type deciderAnswer struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// Approve runs the decider on r. Its error is ctx's, when ctx ends
// before the decider answers; every other outcome is an Answer, a denial
// unless the decider approved in due form.
func (d *Decider) Approve(ctx context.Context, r Request) (Answer, error) {
	a := Answer{By: "decider"}
	if len(d.Argv) > 0 {
		a.By = "decider " + d.Argv[0]
	}
	reason, allow, err := d.decide(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	a.Allow, a.Reason, a.At = allow, reason, time.Now().UTC()
	return a, nil
}

// decide returns the decider's verdict and its reason, or why there is none.
func (d *Decider) decide(ctx context.Context, r Request) (string, bool, error) {
	timeout := d.Timeout
	switch {
	case len(d.Argv) == 0 || !filepath.IsAbs(d.Argv[0]):
		return "the decider is not named by an absolute path: deny", false, nil
	case timeout == 0:
		timeout = DefaultDeciderTimeout
	case timeout < 0 || timeout > MaxDeciderTimeout:
		return fmt.Sprintf("the decider's timeout %v is not between 0 and %v: deny", timeout, MaxDeciderTimeout), false, nil
	}
	if !requestIsUTF8(r) {
		return "the request has bytes that are not UTF-8, which the decider's JSON cannot carry exactly: deny", false, nil
	}
	input, err := json.Marshal(deciderInput{Version: DeciderProtocol, Request: r})
	if err != nil {
		return "the request could not be encoded for the decider: " + err.Error() + ": deny", false, nil
	}
	out, problem, err := runDecider(ctx, d.Argv, input, timeout)
	if err != nil {
		return "", false, fmt.Errorf("approval: asking the decider %s: %w", termtext.Clip(d.Argv[0], 200), err)
	}
	if problem != "" {
		return "the decider " + problem + ": deny", false, nil
	}
	return parseAnswer(out)
}

func requestIsUTF8(r Request) bool {
	for _, s := range slices.Concat([]string{r.ID, r.Session, r.Tool, r.PolicyDigest, r.Rule, r.Reason, r.Justification,
		r.Program, r.ProgramDigest, r.Cwd, r.Stdin, r.Task, r.Workspace, r.Image}, r.Argv, r.Env) {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// parseAnswer reads the decider's stdout strictly: one JSON object with
// "decision" and, optionally, "reason" (at most 1 KiB, no control
// characters), nothing else, nothing after it.
func parseAnswer(out []byte) (string, bool, error) {
	const form = `{"decision":"allow"|"deny","reason":"…"}`
	if !utf8.Valid(out) {
		return "the decider's answer is not UTF-8: deny", false, nil
	}
	var ans deciderAnswer
	if _, err := strict.Decode("decider answer", out, false, maxDeciderOutput, &ans); err != nil {
		why := err.Error()
		var se *strict.Error
		if errors.As(err, &se) {
			why = se.Msg
			if se.Line > 0 {
				why = fmt.Sprintf("line %d, column %d: %s", se.Line, se.Col, se.Msg)
			}
		}
		return "the decider's answer is not one JSON object " + form + ": " + termtext.Clip(why, 200) + ": deny", false, nil
	}
	switch {
	case len(ans.Reason) > maxDeciderReason:
		return fmt.Sprintf("the decider's reason has %d bytes, more than %d: deny", len(ans.Reason), maxDeciderReason), false, nil
	case strings.ContainsFunc(ans.Reason, unicode.IsControl):
		return "the decider's reason has control characters: deny", false, nil
	case ans.Decision == "allow":
		return ans.Reason, true, nil
	case ans.Decision == "deny" && ans.Reason == "":
		return "the decider denied it", false, nil
	case ans.Decision == "deny":
		return ans.Reason, false, nil
	}
	return fmt.Sprintf(`the decider answered decision "%s"; only "allow" and "deny" are answers: deny`, termtext.Clip(ans.Decision, 40)), false, nil
}
