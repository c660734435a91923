package payload

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// The proxy payloads talk to airlock's egress proxy the way an attacker
// would: they write the request line, the CONNECT target and the SOCKS5
// address bytes themselves, so that the proxy sees exactly the spelling
// under test (a library client would normalise "0xA9FEA9FE" or choose the
// SOCKS5 address type itself). That is why they are hand-written.
func init() {
	Register("http-get", httpGet)
	Register("connect-tunnel", connectTunnel)
	Register("socks-connect", socksConnect)
}

// reasonHeader is the proxy's refusal header (proxy.ReasonHeader; not
// imported, so that a payload links nothing of the proxy).
const reasonHeader = "X-Airlock-Reason"

// proxyAddr returns host:port of the proxy named by the first set
// variable of names.
func proxyAddr(names ...string) (string, error) {
	for _, n := range names {
		v := os.Getenv(n)
		if v == "" {
			continue
		}
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("$%s=%q is not a proxy URL", n, v)
		}
		return u.Host, nil
	}
	return "", fmt.Errorf("none of $%s is set", strings.Join(names, ", $"))
}

func dialProxy(names ...string) (net.Conn, error) {
	addr, err := proxyAddr(names...)
	if err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("tcp", addr, netWait)
	if err != nil {
		return nil, fmt.Errorf("reach the proxy at %s: %w", addr, err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c, nil
}

// broken reports a payload that could not make its attempt at all.
func broken(name string, err error) int {
	r := Report{Attempt: name, Errno: errnoName(err), Evidence: "could not attempt: " + err.Error(),
		Detail: map[string]string{"broken": "true"}}
	return report(r)
}

// http-get URL: "GET URL" through $HTTP_PROXY, always (loopback too).
// The report has the status, the proxy's X-Airlock-Reason and the start
// of the body; it succeeded if the answer came from upstream, not from
// the proxy (which marks every refusal and failure with its header).
func httpGet(args []string) int {
	if len(args) != 1 {
		return usage("http-get", "URL")
	}
	host := hostOf(args[0])
	c, err := dialProxy("HTTP_PROXY", "http_proxy")
	if err != nil {
		return broken("http-get", err)
	}
	defer c.Close()
	req := "GET " + args[0] + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: airlock-payload\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return broken("http-get", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return broken("http-get", fmt.Errorf("read the proxy's answer: %w", err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return report(httpReport("http-get", resp, body))
}

func httpReport(name string, resp *http.Response, body []byte) Report {
	reason := resp.Header.Get(reasonHeader)
	r := Report{Attempt: name, Succeeded: reason == "" && resp.StatusCode < 400, Detail: map[string]string{
		"status": strconv.Itoa(resp.StatusCode), "reason": reason, "body": string(body[:min(len(body), 256)]),
	}}
	r.Evidence = "HTTP " + resp.Status
	if reason != "" {
		r.Evidence += "; " + reasonHeader + ": " + reason
	}
	return r
}

// hostOf is the host part of an absolute-form URL as written (the Host
// header), without parsing it as a URL library would.
func hostOf(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	return rest
}

// connect-tunnel HOST:PORT: "CONNECT HOST:PORT" through $HTTPS_PROXY. It
// succeeded if the proxy opened the tunnel; the first line an upstream
// sends then is in the report.
func connectTunnel(args []string) int {
	if len(args) != 1 {
		return usage("connect-tunnel", "HOST:PORT")
	}
	c, err := dialProxy("HTTPS_PROXY", "https_proxy")
	if err != nil {
		return broken("connect-tunnel", err)
	}
	defer c.Close()
	req := "CONNECT " + args[0] + " HTTP/1.1\r\nHost: " + args[0] + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return broken("connect-tunnel", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return broken("connect-tunnel", fmt.Errorf("read the proxy's answer: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return report(httpReport("connect-tunnel", resp, body))
	}
	r := Report{Attempt: "connect-tunnel", Succeeded: true, Detail: map[string]string{"status": "200"},
		Evidence: "the proxy opened a tunnel to " + args[0]}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if line, err := br.ReadString('\n'); err == nil || line != "" {
		r.Detail["upstream"] = strings.TrimSpace(line)
	}
	return report(r)
}

// SOCKS5 address types (RFC 1928).
const (
	socksIPv4   = 1
	socksDomain = 3
	socksIPv6   = 4
)

// socksReplies names the SOCKS5 reply codes.
var socksReplies = []string{"succeeded", "general failure", "connection not allowed by ruleset",
	"network unreachable", "host unreachable", "connection refused", "TTL expired",
	"command not supported", "address type not supported"}

// socks-connect HOST:PORT [domain]: a SOCKS5 CONNECT through $ALL_PROXY.
// An IP literal is sent as an address (type 1 or 4) unless "domain" asks
// for it to be sent as a name, as a client that resolves nothing would.
func socksConnect(args []string) int {
	if len(args) < 1 || len(args) > 2 || (len(args) == 2 && args[1] != "domain") {
		return usage("socks-connect", "HOST:PORT [domain]")
	}
	host, portStr, err := net.SplitHostPort(args[0])
	port, perr := strconv.ParseUint(portStr, 10, 16)
	if err != nil || perr != nil || len(host) > 255 {
		return usage("socks-connect", "HOST:PORT [domain]")
	}
	c, err := dialProxy("ALL_PROXY", "all_proxy")
	if err != nil {
		return broken("socks-connect", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		return broken("socks-connect", err)
	}
	var greet [2]byte
	if _, err := io.ReadFull(c, greet[:]); err != nil || greet != [2]byte{5, 0} {
		return broken("socks-connect", fmt.Errorf("SOCKS5 greeting answered %v: %v", greet, err))
	}
	req := []byte{5, 1, 0}
	a, aerr := netip.ParseAddr(host)
	switch {
	case aerr == nil && len(args) == 1 && a.Is4():
		b := a.As4()
		req = append(append(req, socksIPv4), b[:]...)
	case aerr == nil && len(args) == 1:
		b := a.As16()
		req = append(append(req, socksIPv6), b[:]...)
	default:
		req = append(append(req, socksDomain, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		return broken("socks-connect", err)
	}
	var head [4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return broken("socks-connect", fmt.Errorf("read the SOCKS5 reply: %w", err))
	}
	if head[0] != 5 {
		return broken("socks-connect", errors.New("not a SOCKS5 reply"))
	}
	code := int(head[1])
	name := "unknown"
	if code < len(socksReplies) {
		name = socksReplies[code]
	}
	r := Report{Attempt: "socks-connect", Succeeded: code == 0, Detail: map[string]string{"reply": strconv.Itoa(code)}}
	r.Evidence = fmt.Sprintf("SOCKS5 reply %d (%s) for %s", code, name, args[0])
	return report(r)
}
