package payload

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

func init() { Register("connect-flood", connectFlood) }

// connect-flood N HOST:PORT [distinct]: N CONNECT requests through
// $HTTPS_PROXY, one connection each, as fast as the proxy answers: the
// refusal flood of the review (18,000 records in 8 s). With
// "distinct" each asks for another name (h<i>.HOST), so that no two
// refusals are identical. The report counts the attempts and how the
// proxy answered them; it succeeded if any tunnel opened.
func connectFlood(args []string) int {
	if len(args) < 2 || len(args) > 3 || len(args) == 3 && args[2] != "distinct" {
		return usage("connect-flood", "N HOST:PORT [distinct]")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return usage("connect-flood", "N HOST:PORT [distinct]")
	}
	refused, opened, failed := 0, 0, 0
	for i := range n {
		target := args[1]
		if len(args) == 3 {
			target = fmt.Sprintf("h%d.%s", i, target)
		}
		switch status := floodOnce(target); {
		case status == http.StatusOK:
			opened++
		case status > 0:
			refused++
		default:
			failed++
		}
	}
	return report(Report{Attempt: "connect-flood", Succeeded: opened > 0,
		Evidence: fmt.Sprintf("%d CONNECT attempts: %d refused by the proxy, %d tunnels, %d failed", n, refused, opened, failed),
		Detail: map[string]string{"attempts": strconv.Itoa(n), "refused": strconv.Itoa(refused),
			"opened": strconv.Itoa(opened), "failed": strconv.Itoa(failed)}})
}

// floodOnce sends one CONNECT and returns the proxy's status, 0 when it
// gave none.
func floodOnce(target string) int {
	c, err := dialProxy("HTTPS_PROXY", "https_proxy")
	if err != nil {
		return 0
	}
	defer c.Close()
	return connectStatus(c, target)
}

// connectStatus sends CONNECT target on c and returns the proxy's status,
// 0 when it gave none.
func connectStatus(c net.Conn, target string) int {
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
