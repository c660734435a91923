// Command mcp-bench times MCP tool calls to `airlock mcp` through the Go
// SDK's client. Rows:
//
//   - mcp-stdio, mcp-http: an allowed call's round trip in a live session,
//     through one long-lived client over stdio and over streamable HTTP
//     on loopback: decided, recorded, run as /bin/true in the client's
//     sandbox session, answered with its structured result; N calls.
//   - first-pool, first-cold: a new MCP session's first call, which opens
//     its sandbox session, against `airlock mcp --http --pool 1` (on a
//     sandbox built ahead: a sample whose session was opened cold, because
//     the pool had not refilled yet, is dropped and taken again) and
//     against `airlock mcp --http` (cold); N/4 of each, at least 5, each
//     client closed before the next comes.
//
// It prints, per row, the count, the median, the quartiles and the 99th
// percentile in milliseconds; bench/mcp/run.sh prints them beside a fresh
// bwrap run, bench/regress checks their ratios.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/mcpserver"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: mcp-bench AIRLOCK POLICY AUDIT N")
		os.Exit(2)
	}
	bin, pol, audit := os.Args[1], os.Args[2], os.Args[3]
	n, err := strconv.Atoi(os.Args[4])
	check(err)
	args := []string{"mcp", "--policy", pol, "--audit", audit}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	cs, err := connect(&mcp.CommandTransport{Command: cmd})
	check(err)
	calls("mcp-stdio", cs, n)
	check(cs.Close())

	cold := serve(bin, args)
	defer cold.stop()
	cs, err = connect(cold.transport())
	check(err)
	calls("mcp-http", cs, n)
	check(cs.Close())

	opens := max(n/4, 5)
	pooled := serve(bin, append(args, "--pool", "1"))
	defer pooled.stop()
	print("first-pool", pooled.firsts(opens, true))
	print("first-cold", cold.firsts(opens, false))
}

// server is an `airlock mcp --http` of the benchmark's.
type server struct {
	cmd   *exec.Cmd
	url   string
	token string
	lines chan string // its stderr's lines after the first
}

// serve starts airlock with args and --http on a loopback port.
func serve(bin string, args []string) *server {
	s := &server{token: mcpserver.NewToken(), lines: make(chan string, 64)}
	s.cmd = exec.Command(bin, append(args, "--http", "127.0.0.1:0")...)
	s.cmd.Env = append(os.Environ(), "AIRLOCK_MCP_TOKEN="+s.token)
	stderr, err := s.cmd.StderrPipe()
	check(err)
	check(s.cmd.Start())
	lines := bufio.NewScanner(stderr)
	for s.url == "" && lines.Scan() {
		if _, u, ok := strings.Cut(lines.Text(), "serving "); ok {
			s.url = strings.Fields(u)[0]
		}
	}
	go func() {
		for lines.Scan() {
			select {
			case s.lines <- lines.Text():
			default: // nobody waits for it
			}
		}
		close(s.lines)
	}()
	return s
}

func (s *server) transport() mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: bearer(s.token)}}
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
}

// gap is the pause before each new MCP session, for the last one's
// teardown and the pool's refill to settle (the pool refills once a
// session's first step has run).
const gap = 100 * time.Millisecond

// firsts times the first call of n new MCP sessions, each connected
// after the last one's client closed and a gap. With pooled, a sample
// whose sandbox session was not opened on a sandbox built ahead is dropped
// and taken again.
func (s *server) firsts(n int, pooled bool) []time.Duration {
	var times []time.Duration
	for dropped := 0; len(times) < n; {
		time.Sleep(gap)
		for drained := false; !drained; { // the last client's lines
			select {
			case <-s.lines:
			default:
				drained = true
			}
		}
		cs, err := connect(s.transport())
		check(err)
		took := call(cs)
		check(cs.Close())
		if pooled && !s.builtAhead() {
			if dropped++; dropped > 10*n {
				check(fmt.Errorf("%d sessions of %d were opened cold: the pool does not keep up", dropped, n+dropped))
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		times = append(times, took)
	}
	return times
}

// builtAhead reads the server's notices until the one that says how the
// sandbox session of the last client opened (one client at a time: the
// first such line is its).
func (s *server) builtAhead() bool {
	timeout := time.After(5 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				check(io.ErrUnexpectedEOF)
			}
			if strings.Contains(l, " opened") {
				return strings.Contains(l, "on a sandbox built ahead")
			}
		case <-timeout:
			check(fmt.Errorf("no notice of the sandbox session's opening in 5s"))
		}
	}
}

func connect(t mcp.Transport) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "mcp-bench", Version: "1"}, nil).Connect(context.Background(), t, nil)
}

// calls makes n timed calls after five untimed ones (the first opens the
// sandbox session) and prints the row.
func calls(name string, cs *mcp.ClientSession, n int) {
	var times []time.Duration
	for i := range n + 5 {
		took := call(cs)
		if i >= 5 {
			times = append(times, took)
		}
	}
	print(name, times)
}

// call makes one allowed call of /bin/true and returns its round trip.
func call(cs *mcp.ClientSession) time.Duration {
	start := time.Now()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bench", Arguments: map[string]any{"command": "/bin/true"}})
	took := time.Since(start)
	check(err)
	var res enforcer.Result
	b, _ := json.Marshal(r.StructuredContent)
	check(json.Unmarshal(b, &res))
	if r.IsError || res.ExitCode != 0 {
		fmt.Fprintln(os.Stderr, "mcp-bench: the call failed:", res.ExitCode, res.Error)
		os.Exit(1)
	}
	return took
}

// print prints one row: name, count, median, quartiles and p99 in ms, as
// bench/session's program does.
func print(name string, times []time.Duration) {
	slices.Sort(times)
	n := len(times)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("%s %d %.3f %.3f %.3f %.3f\n", name, n, ms(times[n/2]), ms(times[n/4]), ms(times[3*n/4]), ms(times[min(n-1, n*99/100)]))
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-bench:", err)
		os.Exit(125)
	}
}
