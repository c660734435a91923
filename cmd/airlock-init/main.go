// Command airlock-init is the sandbox's init as a program of its own: a
// few megabytes instead of airlock's whole binary, which airlock runs as
// each sandbox's init when it lies beside airlock's binary, trusted and
// built from the same sources; otherwise airlock runs itself as the init.
// Install both with go install ./cmd/... or go build -o DIR/ ./cmd/airlock
// ./cmd/airlock-init (docs/sandbox.md, "The small init").
package main

import "github.com/airlock-sandbox/airlock/sandbox/smallinit"

func main() { smallinit.Main() }
