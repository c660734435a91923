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
)

func main() {
	os.Exit(Main(os.Args[1:]))
}
