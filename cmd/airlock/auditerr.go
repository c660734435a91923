package main

import (
	"io"

	"github.com/airlock-sandbox/airlock/enforcer"
)

// printAuditError prints the line of a record the audit log refused
// (enforcer.PrintAuditError, as a run's and a step's report prints it).
func printAuditError(w io.Writer, msg string) { enforcer.PrintAuditError(w, msg) }
