package payload

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The egress payloads try what the proxy's inspection and budgets stop:
// a tunnel whose TLS names another host (domain fronting), more bytes
// than a budget allows, a rule-breaking request pipelined behind an
// allowed one.
func init() {
	Register("tls-front", tlsFront)
	Register("tunnel-send", tunnelSend)
	Register("pipeline", pipeline)
}

// openTunnel sends CONNECT target through $HTTPS_PROXY and returns the
// tunnel; without one it has reported the proxy's refusal, or the broken
// attempt, and returns nil and the payload's exit status.
func openTunnel(name, target string) (net.Conn, int) {
	c, err := dialProxy("HTTPS_PROXY", "https_proxy")
	if err != nil {
		return nil, broken(name, err)
	}
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		c.Close()
		return nil, broken(name, err)
	}
	// Read the answer byte by byte, so that nothing of the tunnel is read
	// into a buffer.
	var head []byte
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) && len(head) < 8192 {
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil {
			c.Close()
			return nil, broken(name, fmt.Errorf("read the proxy's answer: %w", err))
		}
		head = append(head, b[0])
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, broken(name, err)
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, report(httpReport(name, resp, nil))
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, 0
}

// tls-front HOST:PORT SNI: a TLS handshake naming SNI through a tunnel
// to HOST:PORT. It succeeded if the handshake completed (the certificate
// is not checked: what is under test is whether the proxy let the
// ClientHello through).
func tlsFront(args []string) int {
	if len(args) != 2 {
		return usage("tls-front", "HOST:PORT SNI")
	}
	c, status := openTunnel("tls-front", args[0])
	if c == nil {
		return status
	}
	defer c.Close()
	tc := tls.Client(c, &tls.Config{ServerName: args[1], InsecureSkipVerify: true})
	err := tc.Handshake()
	r := Report{Attempt: "tls-front", Succeeded: err == nil, Detail: map[string]string{"sni": args[1]}}
	if err != nil {
		r.Evidence, r.Detail["error"] = "the handshake failed: "+err.Error(), err.Error()
	} else {
		r.Evidence = "a TLS session naming " + args[1] + " was set up through the tunnel to " + args[0]
	}
	return report(r)
}

// tunnel-send HOST:PORT N: N bytes into a tunnel to HOST:PORT, then a
// half-close, then what comes back until the end. It succeeded if the
// upstream's answer is N in decimal: the count of bytes it received (a
// sink that answers so), so that all N got through.
func tunnelSend(args []string) int {
	n, err := strconv.Atoi(safeArg(args, 1))
	if len(args) != 2 || err != nil || n < 0 {
		return usage("tunnel-send", "HOST:PORT N")
	}
	c, status := openTunnel("tunnel-send", args[0])
	if c == nil {
		return status
	}
	defer c.Close()
	buf := bytes.Repeat([]byte("x"), 4096)
	sent := 0
	var werr error
	for sent < n && werr == nil {
		var w int
		w, werr = c.Write(buf[:min(len(buf), n-sent)])
		sent += w
	}
	if werr == nil {
		werr = c.(*net.TCPConn).CloseWrite()
	}
	back, rerr := io.ReadAll(io.LimitReader(c, 64))
	answer := strings.TrimSpace(string(back))
	r := Report{Attempt: "tunnel-send", Succeeded: answer == strconv.Itoa(n),
		Detail: map[string]string{"sent": strconv.Itoa(sent), "answer": answer}}
	r.Evidence = fmt.Sprintf("%d of %d bytes written into the tunnel; the upstream answered %q", sent, n, answer)
	if err := errors.Join(werr, rerr); err != nil {
		r.Evidence += "; " + err.Error()
	}
	return report(r)
}

func safeArg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// pipeline HOST:PORT "METHOD PATH" "METHOD PATH": two HTTP/1.1 requests
// written in one piece into a TLS session (trusting the system's roots,
// $SSL_CERT_FILE included) through a tunnel to HOST:PORT, then both
// answers read. It succeeded if the second was answered by the upstream.
func pipeline(args []string) int {
	if len(args) != 3 {
		return usage("pipeline", `HOST:PORT "METHOD PATH" "METHOD PATH"`)
	}
	c, status := openTunnel("pipeline", args[0])
	if c == nil {
		return status
	}
	defer c.Close()
	host, _, _ := net.SplitHostPort(args[0])
	tc := tls.Client(c, &tls.Config{ServerName: host, NextProtos: []string{"http/1.1"}})
	var reqs strings.Builder
	for _, line := range args[1:] {
		fmt.Fprintf(&reqs, "%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: airlock-payload\r\n\r\n", line, host)
	}
	if _, err := io.WriteString(tc, reqs.String()); err != nil {
		return broken("pipeline", err)
	}
	br := bufio.NewReader(tc)
	r := Report{Attempt: "pipeline", Detail: map[string]string{}}
	for i := range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			r.Evidence = fmt.Sprintf("answer %d: %v", i+1, err)
			return report(r)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		k := strconv.Itoa(i + 1)
		r.Detail["status"+k], r.Detail["reason"+k] = strconv.Itoa(resp.StatusCode), resp.Header.Get(reasonHeader)
	}
	status2, _ := strconv.Atoi(r.Detail["status2"])
	r.Succeeded = r.Detail["reason2"] == "" && status2 < 400
	r.Evidence = "answers " + r.Detail["status1"] + " and " + r.Detail["status2"]
	return report(r)
}
