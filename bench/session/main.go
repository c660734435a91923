//go:build linux

// Command session-bench times, through the library, one step of /bin/true
// in a live session (enforcer.Session.Exec: the decision, its synced audit
// record, the step in the session's sandbox, the lazy outcome record), N
// times; a session opened on a sandbox a Pool built ahead
// (Pool.OpenSession, until the session is ready for its first command),
// and one opened cold (Enforcer.OpenSession), N/4 times each, the pool
// refilled between opens and each session closed untimed; a step of the
// sandbox alone (sandbox.Session.Exec, no gate and no audit record:
// sandbox-step); and the floor
// under a step, N times: a 600-byte line (about a decision record) written
// beside the audit log and fdatasync'd, then /bin/true started and waited
// for, with nothing of a sandbox (floor-step). It prints, per row, the
// count, the median, the quartiles and the 99th percentile in
// milliseconds. bench/session/run.sh prints them beside the command
// line's figures and bwrap's.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// gap is the pause before each timed step (SESSION_BENCH_GAP, a Go
// duration; none by default): bench/session/run.sh's SPACED=1.
var gap, _ = time.ParseDuration(os.Getenv("SESSION_BENCH_GAP"))

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
	times := make([]time.Duration, 0, n+5)
	for range n + 5 {
		time.Sleep(gap)
		start := time.Now()
		res, err := s.Exec(ctx, enforcer.StepRequest{Tool: "bench", Command: "/bin/true"})
		if err != nil || res.ExitCode != 0 {
			fmt.Fprintln(os.Stderr, "session-bench:", res.ExitCode, res.Error, err)
			os.Exit(1)
		}
		times = append(times, time.Since(start))
	}
	s.Close(ctx)
	print("library-step", times[5:]) // after a warm-up
	print("sandbox-step", sandboxStep(pol.CapsFor("bench").Limits(), n))
	print("floor-step", floorStep(os.Args[2]+".floor", n))

	opens := max(n/4, 5)
	p, err := e.NewPool(ctx, enforcer.PoolRequest{Size: 1})
	check(err)
	defer p.Close()
	times = times[:0]
	for range opens {
		for p.Ready() < 1 {
			if err := p.Err(); err != nil {
				check(err)
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond) // the build's teardown work settles
		start := time.Now()
		s, err := p.OpenSession(ctx, enforcer.SessionRequest{})
		check(err)
		times = append(times, time.Since(start))
		if !s.BuiltAhead() {
			check(fmt.Errorf("the pool's session was opened cold"))
		}
		s.Close(ctx)
	}
	print("pool-open", times)
	times = times[:0]
	for range opens {
		start := time.Now()
		s, err := e.OpenSession(ctx, enforcer.SessionRequest{})
		check(err)
		times = append(times, time.Since(start))
		s.Close(ctx)
	}
	print("cold-open", times)
}

// sandboxStep times n steps of the sandbox alone (sandbox.Session.Exec
// of /bin/true, the tool's caps): no gate, no audit record.
func sandboxStep(caps limits.Caps, n int) []time.Duration {
	ctx := context.Background()
	ss, err := sandbox.StartSession(ctx, sandbox.Config{Caps: caps, Proxy: true})
	check(err)
	defer ss.Close()
	times := make([]time.Duration, 0, n)
	for i := range n + 5 {
		time.Sleep(gap)
		start := time.Now()
		res, err := ss.Exec(ctx, sandbox.Step{Path: "/bin/true"})
		if err != nil || res.ExitCode != 0 {
			check(fmt.Errorf("sandbox step: %+v %v", res, err))
		}
		if i >= 5 {
			times = append(times, time.Since(start))
		}
	}
	return times
}

// floorStep times n steps of the floor: a line written to a file in
// name's directory and synced, then /bin/true run.
func floorStep(name string, n int) []time.Duration {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	check(err)
	defer os.Remove(name)
	defer f.Close()
	line := []byte(strings.Repeat("x", 599) + "\n")
	times := make([]time.Duration, 0, n)
	for i := range n + 5 {
		time.Sleep(gap)
		start := time.Now()
		_, err := f.Write(line)
		check(err)
		check(unix.Fdatasync(int(f.Fd())))
		pid, err := syscall.ForkExec("/bin/true", []string{"/bin/true"}, nil)
		check(err)
		var ws syscall.WaitStatus
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		check(err)
		if i >= 5 { // after a warm-up
			times = append(times, time.Since(start))
		}
	}
	return times
}

// print prints one row: name, count, median, quartiles and p99 in ms.
func print(name string, times []time.Duration) {
	slices.Sort(times)
	n := len(times)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("%s %d %.3f %.3f %.3f %.3f\n", name, n, ms(times[n/2]), ms(times[n/4]), ms(times[3*n/4]), ms(times[min(n-1, n*99/100)]))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "session-bench:", err)
		os.Exit(125)
	}
}
