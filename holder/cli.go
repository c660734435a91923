package holder

import (
	"context"
	"os"

	"github.com/airlock-sandbox/airlock/enforcer"
)

// CLI is a quick client's `airlock session exec` command line (package
// holder/quick), which the holder runs for it: the arguments after "exec"
// (the first is this holder's session id), the client's environment (for
// --env NAME) and working directory (for a relative --result), and pipes
// the client relays to and from its own streams.
type CLI struct {
	Args, Env             []string
	Dir                   string
	Stdin, Stdout, Stderr *os.File
	// Exec runs one step in the held session.
	Exec func(context.Context, enforcer.StepRequest) (enforcer.Result, error)
}

// CLIFunc runs a CLI and returns its exit status; ctx ends when the
// client hangs up (Ctrl-C).
type CLIFunc func(ctx context.Context, c CLI) int
