package main

import (
	"fmt"
	"io"
	"strconv"
)

// printAuditError prints the line of a record the audit log refused
// (docs/cli.md, "Audit failures"), escaped: control characters and bytes
// that are not UTF-8 never reach the terminal raw.
func printAuditError(w io.Writer, msg string) {
	q := strconv.Quote(msg)
	fmt.Fprintf(w, "airlock: audit: error: %s\n", q[1:len(q)-1])
}
