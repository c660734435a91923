// Command sandbox-bench runs /bin/true once in a full airlock sandbox
// through the library — every namespace, the cgroup, Landlock, seccomp,
// the proxy listener and the start-up probes, as the enforcer asks for
// them — and exits with its status. bench/sandbox/run.sh times it (the
// "library" row) beside `airlock run` and the peers: the difference to the
// airlock row is the command line's own cost (policy, audit, proxy).
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox"
)

func main() {
	sandbox.Init()
	cfg := sandbox.Config{
		Path: "/bin/true",
		Caps: limits.Caps{
			Wall: 10 * time.Second, CPU: 10 * time.Second, MemoryBytes: 512 << 20,
			Tasks: 20, DiskWriteBytes: 100 << 20, OpenFiles: 256, OutputBytes: 16 << 20,
		},
		Proxy:  true,
		Probes: &sandbox.ProbeRequest{},
		Stderr: os.Stderr,
	}
	s, err := sandbox.Start(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
		os.Exit(125)
	}
	if err := s.Release(); err != nil {
		s.Kill()
		fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
		os.Exit(125)
	}
	res, err := s.Wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
		os.Exit(125)
	}
	os.Exit(res.ExitCode)
}
