package enforcer_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/payload"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestMain makes the test binary a sandbox init when re-executed as one,
// and the attacker's payload when a test runs it inside a sandbox as
// "/.airlock/self payload NAME ARG...".
func TestMain(m *testing.M) {
	sandbox.Init()
	if path := os.Getenv(runnerEnv); path != "" {
		os.Exit(runnerMain(path, "run-killed"))
	}
	if len(os.Args) > 2 && os.Args[1] == "payload" {
		os.Exit(runPayload(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// runnerEnv makes the test binary an airlock that runs one long command
// on the audit log it names, and waits (TestMain calls runnerMain).
const runnerEnv = "ENFORCER_TEST_RUNNER"

// runnerMain runs a command that sleeps, on the log at path, with the run
// id id; the test kills it (SIGKILL) while the command runs.
func runnerMain(path, id string) int {
	pol, _ := policy.Parse("test.json", []byte(testPolicy))
	log, err := audit.Open(path)
	if err != nil {
		return 1
	}
	var self sandbox.Config
	self.BindSelf()
	e, err := enforcer.New(pol, log, enforcer.Options{Binds: self.Binds})
	if err != nil {
		return 1
	}
	_, _ = e.Run(context.Background(), enforcer.Request{Tool: "agent_code", Command: sandbox.SelfPath,
		Args: []string{"payload", "sleep"}, RunID: id})
	return 0
}

// spins keeps the spin payload's loop from being empty.
var spins int

// runPayload is the code that runs inside the sandbox in these tests.
func runPayload(name string, args []string) int {
	switch name {
	case "spin":
		for n := 0; ; n++ { // burn CPU until a cap kills the process
			spins = n
		}
	case "sleep":
		time.Sleep(time.Hour)
	case "membomb": // allocate and touch 16 MiB at a time until killed
		var keep [][]byte
		for {
			b := make([]byte, 16<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
			spins = len(keep)
		}
	case "echo":
		fmt.Println(strings.Join(args, " "))
	case "http-get":
		// Ask the proxy for args[0] the way a client honouring
		// $HTTP_PROXY does, and print the status and the reason.
		proxy := strings.TrimPrefix(os.Getenv("HTTP_PROXY"), "http://")
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			fmt.Println("dial proxy:", err)
			return 1
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", args[0])
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		fmt.Println(strings.SplitN(string(buf[:n]), "\r\n", 2)[0])
	case "connect":
		c, err := net.DialTimeout("tcp", args[0], 2*time.Second)
		if err != nil {
			fmt.Println("connect:", err)
			return 1
		}
		c.Close()
		fmt.Println("connected")
	default:
		return payload.Run(name, args) // airlock's own attack programs
	}
	return 0
}
