// Command hello is the start of a tiny Go program, the floor under any Go
// front or init: bench/floor/run.sh times it (the "go-hello" row).
package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
