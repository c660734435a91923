// Command mcp-bench times an allowed tool call's round trip through one
// long-lived MCP client (the Go SDK's) to `airlock mcp`, over stdio and
// over streamable HTTP on loopback: each call is decided, recorded, run as
// /bin/true in the client's live sandbox session, and answered with its
// structured result. It prints, per transport, the median and quartiles in
// milliseconds; bench/mcp/run.sh prints them beside a fresh bwrap run.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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
	bench("mcp-stdio", cs, n)
	check(cs.Close())

	token := mcpserver.NewToken()
	srv := exec.Command(bin, append(args, "--http", "127.0.0.1:0")...)
	srv.Env = append(os.Environ(), "AIRLOCK_MCP_TOKEN="+token)
	stderr, err := srv.StderrPipe()
	check(err)
	check(srv.Start())
	defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
	lines := bufio.NewScanner(stderr)
	url := ""
	for url == "" && lines.Scan() {
		if _, u, ok := strings.Cut(lines.Text(), "serving "); ok {
			url = strings.Fields(u)[0]
		}
	}
	go func() {
		for lines.Scan() {
		}
	}()
	cs, err = connect(&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer(token)}})
	check(err)
	bench("mcp-http", cs, n)
	check(cs.Close())
}

func connect(t mcp.Transport) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "mcp-bench", Version: "1"}, nil).Connect(context.Background(), t, nil)
}

// bench makes n timed calls after five untimed ones (the first opens the
// sandbox session).
func bench(name string, cs *mcp.ClientSession, n int) {
	ctx := context.Background()
	var times []time.Duration
	for i := range n + 5 {
		start := time.Now()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bench", Arguments: map[string]any{"command": "/bin/true"}})
		took := time.Since(start)
		check(err)
		var res enforcer.Result
		b, _ := json.Marshal(r.StructuredContent)
		check(json.Unmarshal(b, &res))
		if r.IsError || res.ExitCode != 0 {
			fmt.Fprintln(os.Stderr, "mcp-bench: the call failed:", res.ExitCode, res.Error)
			os.Exit(1)
		}
		if i >= 5 {
			times = append(times, took)
		}
	}
	slices.Sort(times)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("%s %d %.3f %.3f %.3f\n", name, n, ms(times[n/2]), ms(times[n/4]), ms(times[3*n/4]))
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
