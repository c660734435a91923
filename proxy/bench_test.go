package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
)

// benchProxy is a proxy allowing the loopback upstream, with a no-op
// event callback: what is measured is the proxy's own work.
func benchProxy(b *testing.B, up *upstream) *harness {
	return newHarness(b, setup{allow: []string{up.hostPort("127.0.0.1"), up.hostPort("svc.test")},
		answers: map[string][]netip.Addr{"svc.test": addrs("127.0.0.1")}, noEvents: true})
}

// oneByte sends a byte through c and waits for its echo.
func oneByte(b *testing.B, c net.Conn) {
	if _, err := c.Write([]byte{'x'}); err != nil {
		b.Fatal(err)
	}
	var buf [1]byte
	if _, err := io.ReadFull(c, buf[:]); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSetupDirect is the baseline: connect to the echo upstream and
// get one byte back.
func BenchmarkSetupDirect(b *testing.B) {
	up := serveUpstream(b, "127.0.0.1:0", echo)
	b.ReportAllocs()
	for b.Loop() {
		c, err := net.Dial("tcp", up.ap.String())
		if err != nil {
			b.Fatal(err)
		}
		oneByte(b, c)
		c.Close()
	}
}

// BenchmarkSetupConnect opens a CONNECT tunnel (an IP literal: no
// lookup) and gets one byte back through it; compare with
// BenchmarkSetupDirect for the proxy's per-connection overhead.
func BenchmarkSetupConnect(b *testing.B) {
	benchSetup(b, false, "127.0.0.1")
}

// BenchmarkSetupConnectName is BenchmarkSetupConnect with a name, resolved
// by the (in-memory) resolver and checked address by address.
func BenchmarkSetupConnectName(b *testing.B) {
	benchSetup(b, false, "svc.test")
}

// BenchmarkSetupSOCKS5 opens a SOCKS5 tunnel and gets one byte back.
func BenchmarkSetupSOCKS5(b *testing.B) {
	benchSetup(b, true, "127.0.0.1")
}

func benchSetup(b *testing.B, socks bool, host string) {
	up := serveUpstream(b, "127.0.0.1:0", echo)
	h := benchProxy(b, up)
	connectReq := []byte(fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", up.hostPort(host)))
	socksReq := []byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, byte(up.port() >> 8), byte(up.port())}
	reply := make([]byte, len(connectEstablished))
	if socks {
		reply = make([]byte, 12)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			b.Fatal(err)
		}
		req := connectReq
		if socks {
			req = socksReq
		}
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply); err != nil {
			b.Fatal(err)
		}
		oneByte(b, c)
		c.Close()
	}
}

// BenchmarkHTTPForward sends absolute-form GETs over one keep-alive client
// connection; each is decided and gets its own upstream connection.
func BenchmarkHTTPForward(b *testing.B) {
	up := serveHTTPUpstream(b, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	h := benchProxy(b, up)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: h.addr})}}
	target := "http://" + up.hostPort("127.0.0.1") + "/"
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Get(target)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// sink reads a connection to its end, then answers with one byte.
func sink(c net.Conn) {
	_, _ = io.Copy(io.Discard, c)
	_, _ = c.Write([]byte{1})
}

// BenchmarkTunnelThroughput pushes data through one CONNECT tunnel into a
// sink (bytes/s is the tunnel's throughput); BenchmarkDirectThroughput is
// the same without the proxy.
func BenchmarkTunnelThroughput(b *testing.B) { benchThroughput(b, true) }

// BenchmarkDirectThroughput is the baseline of BenchmarkTunnelThroughput.
func BenchmarkDirectThroughput(b *testing.B) { benchThroughput(b, false) }

func benchThroughput(b *testing.B, viaProxy bool) {
	up := serveUpstream(b, "127.0.0.1:0", sink)
	var c net.Conn
	if viaProxy {
		h := benchProxy(b, up)
		resp, conn := connect(b, h.addr, up.hostPort("127.0.0.1"))
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
		c = conn.Conn // nothing is buffered after the 200
	} else {
		var err error
		if c, err = net.Dial("tcp", up.ap.String()); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 256<<10)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		b.Fatal(err)
	}
	c.Close()
}
