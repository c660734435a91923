// Package quick is the quick client of `airlock session exec`: it runs
// from its package initialiser, before the rest of the airlock binary is
// initialised, parses the command line and hands the step to the
// session's holder as the full command line does (package holder/step),
// relays the step's streams and exits with its status (docs/sessions.md,
// "The quick client"). A command line it cannot hand over — another
// command, one it cannot read, --help, no such session, a holder that
// does not take the step — is left to the full command line, untouched:
// nothing has run then.
//
// It imports only the lower standard library (not strings, bytes,
// encoding/binary or path/filepath, which Go initialises late: after the
// packages that sort before them and are ready) and packages rundir and
// step, which do the same, so that Go initialises it among the first
// packages; cmd/airlock's TestInitRunsEarly keeps it so. cmd/airlock
// imports it for its initialiser.
package quick

import "os"

// OptOut, set in the environment, leaves every command line to the full
// command line (tests compare the two).
const OptOut = "AIRLOCK_NO_QUICK"

// init runs the quick client for `airlock session exec` and exits with
// the step's status, or returns, having run nothing. Unlike the other
// programs this binary runs from an initialiser (internal/reexec), which
// airlock starts itself and names in their environment, this is the
// caller's own command line, known by its words, and it falls through to
// main when it cannot hand the step over.
func init() {
	a := os.Args
	if len(a) < 3 || a[1] != "session" || a[2] != "exec" || os.Getenv(OptOut) != "" {
		return
	}
	if code, ok := run(a[3:]); ok {
		os.Exit(code)
	}
}
