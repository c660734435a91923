// Command session-bench times one step of /bin/true in a live session
// through the library (enforcer.Session.Exec: the decision, its synced
// audit record, the step in the session's sandbox, the lazy outcome
// record), N times, and prints the median and quartiles in milliseconds.
// bench/session/run.sh prints it beside the command line's figures: the
// difference is the client process and its round trip to the holder.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

func main() {
	sandbox.Init()
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: session-bench POLICY AUDIT N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[3])
	check(err)
	pol, err := policy.Load(os.Args[1])
	check(err)
	log, err := audit.Open(filepath.Clean(os.Args[2]))
	check(err)
	defer log.Close()
	e, err := enforcer.New(pol, log, enforcer.Options{})
	check(err)
	ctx := context.Background()
	s, err := e.OpenSession(ctx, enforcer.SessionRequest{})
	check(err)
	defer s.Close(ctx)
	times := make([]time.Duration, 0, n)
	for range n + 5 {
		start := time.Now()
		res, err := s.Exec(ctx, enforcer.StepRequest{Tool: "bench", Command: "/bin/true"})
		if err != nil || res.ExitCode != 0 {
			fmt.Fprintln(os.Stderr, "session-bench:", res.ExitCode, res.Error, err)
			os.Exit(1)
		}
		times = append(times, time.Since(start))
	}
	times = times[5:] // warm-up
	slices.Sort(times)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("%-14s %5d %10.2f %8.2f %8.2f\n", "library-step", n, ms(times[n/2]), ms(times[n/4]), ms(times[3*n/4]))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "session-bench:", err)
		os.Exit(125)
	}
}
