package mcpserver_test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/sandbox"
)

// TestMain makes the test binary a sandbox init when re-executed as one,
// an MCP server on stdio when a test runs it with serveEnv set, and the
// agent's code when a test runs it inside a sandbox as
// "/.airlock/self payload http-get URL".
func TestMain(m *testing.M) {
	sandbox.Init()
	if cfg := os.Getenv(serveEnv); cfg != "" {
		os.Exit(serveStdio(cfg))
	}
	if len(os.Args) == 4 && os.Args[1] == "payload" && os.Args[2] == "http-get" {
		os.Exit(httpGet(os.Args[3]))
	}
	os.Exit(m.Run())
}

// httpGet asks the sandbox's proxy for url as a client honouring
// $HTTP_PROXY does, and prints the status line.
func httpGet(url string) int {
	c, err := net.Dial("tcp", strings.TrimPrefix(os.Getenv("HTTP_PROXY"), "http://"))
	if err != nil {
		fmt.Println("dial proxy:", err)
		return 1
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", url)
	buf := make([]byte, 4096)
	n, _ := c.Read(buf)
	fmt.Println(strings.SplitN(string(buf[:n]), "\r\n", 2)[0])
	return 0
}
