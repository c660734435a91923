package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-sandbox/airlock/holder"
)

// quickKey is the context key of the quick client's command line that a
// holder runs (runQuick).
type quickKey struct{}

// runQuick runs a quick client's `session exec` command line in the
// holder (package holder/quick; docs/sessions.md, "The quick client"):
// the same command as the client's own command line, printing to the
// client's pipes, looking up --env NAME in the client's environment and a
// relative --result in its working directory, and running the step in the
// held session directly.
func runQuick(ctx context.Context, c holder.CLI) int {
	// Only the session commands: building the whole tree would cost a
	// third of a millisecond a step.
	root := newRootCmdTo(c.Stdout, c.Stderr, newSessionCmd())
	return mainOn(context.WithValue(ctx, quickKey{}, &c), root, append([]string{"session", "exec"}, c.Args...))
}

// quick is a quick client's command line, or nil for this process's own.
type quick holder.CLI

// quickFrom returns the quick client's command line ctx carries, nil for
// this process's own.
func quickFrom(ctx context.Context) *quick {
	if ctx == nil {
		return nil
	}
	c, _ := ctx.Value(quickKey{}).(*holder.CLI)
	return (*quick)(c)
}

// stdin is the command line's standard input.
func (q *quick) stdin() io.Reader {
	if q == nil {
		return os.Stdin
	}
	return q.Stdin
}

// lookupEnv looks name up in the command line's environment.
func (q *quick) lookupEnv(name string) (string, bool) {
	if q == nil {
		return os.LookupEnv(name)
	}
	for _, kv := range q.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// path makes a relative --result path the client's: relative to its
// working directory, not the holder's.
func (q *quick) path(p string) (string, error) {
	if q == nil || p == "" || p == "-" || filepath.IsAbs(p) {
		return p, nil
	}
	if !filepath.IsAbs(q.Dir) {
		return "", errors.New("session exec: --result: a relative path, and the working directory is not known: give an absolute path")
	}
	return filepath.Join(q.Dir, p), nil
}
