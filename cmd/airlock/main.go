// Command airlock decides whether an AI agent's tool may run a command,
// runs the allowed ones in a Linux sandbox with hard resource caps and an
// egress proxy as the only way out, and records every decision in a
// tamper-evident audit stream.
//
// The command line is thin: every command is a call into airlock's library
// packages. Run "airlock --help" for the commands.
package main

import (
	"os"

	// The quick client of session exec, run from its initialiser.
	_ "github.com/airlock-sandbox/airlock/holder/quick"
	"github.com/airlock-sandbox/airlock/sandbox"
)

func main() {
	sandbox.Init() // the sandbox's init, when this process is one; never returns then
	os.Exit(Main(os.Args[1:]))
}
