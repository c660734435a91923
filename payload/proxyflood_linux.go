package payload

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

func init() { Register("proxy-flood", proxyFlood) }

// proxy-flood TARGET N: tries to make airlock's own process grow through
// its proxy. It opens N CONNECT tunnels to TARGET through $HTTPS_PROXY and
// closes each at once (an upstream that never closes keeps the proxy's
// side of each open), then opens N more connections that never finish
// their request and holds them. It reports how many of each the proxy
// took and how many it refused or cut; it succeeded (an unbounded proxy)
// if the proxy took every one.
func proxyFlood(args []string) int {
	if len(args) != 2 {
		return usage("proxy-flood", "HOST:PORT N")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 {
		return usage("proxy-flood", "HOST:PORT N")
	}
	addr, err := proxyAddr("HTTPS_PROXY", "https_proxy")
	if err != nil {
		return broken("proxy-flood", err)
	}
	tunnels, refused := 0, 0
	for range n {
		ok, err := tunnelAndLeave(addr, args[0])
		switch {
		case errors.Is(err, errNoProxy):
			return broken("proxy-flood", err)
		case ok:
			tunnels++
		default:
			refused++ // a 503, or closed before any answer
		}
	}
	// Half-open handshakes: the first bytes of a request, and then nothing.
	var held []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", addr, netWait)
		if err != nil {
			break // the sandbox's own fd limit, or the listener's backlog
		}
		_, _ = io.WriteString(c, "CONNECT ")
		held = append(held, c)
	}
	time.Sleep(500 * time.Millisecond) // for the proxy to take or cut them
	open := 0
	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		var b [1]byte
		if _, err := c.Read(b[:]); errors.Is(err, os.ErrDeadlineExceeded) {
			open++ // still held by the proxy
		}
	}
	cut := len(held) - open
	for _, c := range held {
		c.Close()
	}
	return report(Report{
		Attempt:   "proxy-flood",
		Succeeded: refused == 0 && cut == 0,
		Evidence: strconv.Itoa(tunnels) + " tunnels opened and left, " + strconv.Itoa(refused) + " refused; " +
			strconv.Itoa(open) + " half-open connections held, " + strconv.Itoa(cut) + " cut",
		Detail: map[string]string{"tunnels": strconv.Itoa(tunnels), "refused": strconv.Itoa(refused),
			"held": strconv.Itoa(open), "cut": strconv.Itoa(cut)},
	})
}

// errNoProxy is a proxy that cannot be reached at all.
var errNoProxy = errors.New("the proxy cannot be reached")

// tunnelAndLeave opens a CONNECT tunnel to target through the proxy at
// addr and closes it at once; true when the proxy opened it.
func tunnelAndLeave(addr, target string) (bool, error) {
	c, err := net.DialTimeout("tcp", addr, netWait)
	if err != nil {
		return false, errors.Join(errNoProxy, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return connectStatus(c, target) == http.StatusOK, nil
}
