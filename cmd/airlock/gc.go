package main

import (
	"os"
	"runtime/debug"
)

// serverGCPercent is the garbage collector's target for airlock's
// long-lived servers (mcp, a session holder, proxy), unless GOGC says
// otherwise. Their live heap is a few MiB, so Go's default of 100 runs a
// collection every few steps (an MCP call allocates about half a MiB,
// mostly the MCP SDK's JSON), and each shows in the tail of a call's
// time: at 400, bench/mcp's stdio p99 went from 6.7 to 4.3 ms, for a
// heap of 5-9 MiB instead of 3 (docs/mcp.md, "Speed").
const serverGCPercent = 400

// serverGC sets serverGCPercent where the operator has not set GOGC.
func serverGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serverGCPercent)
	}
}
