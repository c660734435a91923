// Package payload holds the small attack programs that airlock runs inside
// its own sandboxes, as its own binary ("airlock payload NAME [ARG...]"),
// for the demo and the self-test: nothing needs to be installed on the
// host for them to run.
//
// A payload reports what it attempted and what the kernel or the proxy
// answered as one JSON line on stdout (see Report), so that the caller can
// tell an attempt contained by the expected control from one that failed
// for an unrelated reason.
package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Func is a payload's body. It returns the process exit status.
type Func func(args []string) int

var registry = map[string]Func{}

// Register adds a payload under name; it panics on a duplicate name.
func Register(name string, f Func) {
	if _, dup := registry[name]; dup {
		panic("payload: duplicate payload " + name)
	}
	registry[name] = f
}

// Run runs the payload called name with args and returns its exit status;
// an unknown name returns 2.
func Run(name string, args []string) int {
	f, ok := registry[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "payload: unknown payload %q\n", name)
		return 2
	}
	return f(args)
}

// Report is what a payload prints, one JSON object on one line.
type Report struct {
	// Attempt names what was tried.
	Attempt string `json:"attempt"`
	// Succeeded is true when the attempt got through: an escape.
	Succeeded bool `json:"succeeded"`
	// Errno is the error the kernel returned, by name ("EPERM"), if any.
	Errno string `json:"errno,omitempty"`
	// Evidence says what was seen, for the report's evidence column.
	Evidence string `json:"evidence"`
	// Detail carries named observations the caller judges by (an HTTP
	// status, the errno of a discriminating probe, a count, a signal).
	Detail map[string]string `json:"detail,omitempty"`
}

// Exit statuses of a payload. A payload that ran its attempt and reported
// exits ExitReported whatever the attempt's outcome: the outcome is in the
// report. ExitUsage means the payload was called wrongly and attempted
// nothing (a broken attempt, never a contained one).
const (
	ExitReported = 0
	ExitUsage    = 3
)

// Emit writes r to w as one JSON line.
func Emit(w io.Writer, r Report) {
	b, _ := json.Marshal(r)
	fmt.Fprintf(w, "%s\n", b)
}

// Parse returns the reports in a payload's output, in order, skipping any
// line that is not one.
func Parse(out []byte) []Report {
	var reps []Report
	for _, line := range bytes.Split(out, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var r Report
		if json.Unmarshal(line, &r) == nil && r.Attempt != "" {
			reps = append(reps, r)
		}
	}
	return reps
}

// report emits r on stdout and returns ExitReported.
func report(r Report) int {
	Emit(os.Stdout, r)
	return ExitReported
}

// usage reports a payload called with the wrong arguments.
func usage(name, want string) int {
	fmt.Fprintf(os.Stderr, "payload %s: usage: %s %s\n", name, name, want)
	return ExitUsage
}
