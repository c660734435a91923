package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// sendRaw is roundTrip with a deadline: a request wrongly tunnelled
// fails the test instead of hanging it.
func sendRaw(t *testing.T, proxyAddr, raw string) (*http.Response, string) {
	t.Helper()
	c := dialProxy(t, proxyAddr)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, raw)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestDecidedAsSent: the proxy decides on, dials and records the
// destination exactly as the client wrote it on the request line. Go's
// parser percent-decodes a URL's host ("caf%C3%A9.test" became
// "café.test", allowed as xn--caf-dma.test and recorded decoded) and takes
// a CONNECT's destination from the Host header when the target is a path
// ("CONNECT /x" with "Host: a.test:PORT" tunnelled to a.test); a '%' in a
// host is refused, as from SOCKS, and a CONNECT needs host:port.
func TestDecidedAsSent(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	si := netip.MustParseAddr(standIn("127.0.0.1"))
	h := newHarness(t, setup{allow: []string{"a.test", "xn--caf-dma.test"},
		answers: map[string][]netip.Addr{"a.test": {si}, "xn--caf-dma.test": {si}}})
	port := up.port()
	for _, c := range []struct {
		raw, requested, why string
	}{
		{fmt.Sprintf("CONNECT caf%%C3%%A9.test:%d HTTP/1.1\r\nHost: x\r\n\r\n", port), fmt.Sprintf("caf%%C3%%A9.test:%d", port), "percent sign"},
		{fmt.Sprintf("CONNECT /x HTTP/1.1\r\nHost: a.test:%d\r\n\r\n", port), "/x", "authority form"},
		{fmt.Sprintf("CONNECT a.test/x:%d HTTP/1.1\r\nHost: a.test:%d\r\n\r\n", port, port), fmt.Sprintf("a.test/x:%d", port), "malformed"},
		{fmt.Sprintf("CONNECT a.test?x:%d HTTP/1.1\r\nHost: a.test:%d\r\n\r\n", port, port), fmt.Sprintf("a.test?x:%d", port), "malformed"},
		{fmt.Sprintf("GET http://caf%%C3%%A9.test:%d/ HTTP/1.1\r\nHost: a.test\r\n\r\n", port), fmt.Sprintf("caf%%C3%%A9.test:%d", port), "percent sign"},
	} {
		before := len(h.events.stage(StageDecided))
		resp, body := sendRaw(t, h.addr, c.raw)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, c.why) {
			t.Errorf("%q: %d %q, want 403 for %q", c.raw, resp.StatusCode, body, c.why)
			continue
		}
		evs := h.events.wait(t, StageDecided, before+1)
		if ev := evs[len(evs)-1]; ev.Requested != c.requested || ev.Decision.Allowed() {
			t.Errorf("%q: recorded %q (%v), want %q as sent", c.raw, ev.Requested, ev.Decision.Why(), c.requested)
		}
	}
	if d := h.dials.dialled(); len(d) != 0 {
		t.Errorf("dialled %v", d)
	}
	if n := h.res.names(); len(n) != 0 {
		t.Errorf("looked up %v", n)
	}
	// What is allowed is decided, looked up, dialled and recorded as one.
	resp, c := connect(t, h.addr, fmt.Sprintf("A.Test.:%d", port))
	c.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT A.Test.: %d", resp.StatusCode)
	}
	evs := h.events.stage(StageDecided)
	if ev := evs[len(evs)-1]; ev.Requested != fmt.Sprintf("A.Test.:%d", port) || ev.Target.Name != "a.test" {
		t.Errorf("recorded %q as %q", ev.Requested, ev.Target.Name)
	}
	if n := h.res.names(); len(n) != 1 || n[0] != "a.test." {
		t.Errorf("looked up %v, want a.test. alone", n)
	}
}

// TestUserinfoNeverRecorded: credentials a client puts in a request
// target ("user:secret@host") are refused and never reach an event: not
// in a CONNECT's decision (inline or on a keep-alive connection), nor in
// the record of a malformed request's first line.
func TestUserinfoNeverRecorded(t *testing.T) {
	up := serveUpstream(t, "127.0.0.1:0", echo)
	h := newHarness(t, setup{allow: []string{"a.test"}, answers: map[string][]netip.Addr{"a.test": addrs(standIn("127.0.0.1"))}})
	target := "user:s3cret@" + up.hostPort("a.test")
	if resp, _ := sendRaw(t, h.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: a.test\r\n\r\n"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("inline CONNECT with userinfo: %d", resp.StatusCode)
	}
	// A CONNECT after a request on a keep-alive connection goes through
	// the http.Server.
	web := serveHTTPUpstream(t, "127.0.0.1:0", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	c := dialProxy(t, h.addr)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: a.test\r\n\r\n", web.hostPort("a.test"))
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v %v", resp, err)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: a.test\r\n\r\n", target)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("keep-alive CONNECT with userinfo: %v %v", resp, err)
	}
	// Malformed: a header line without a colon.
	if resp, _ := sendRaw(t, h.addr, "GET http://user:s3cret@a.test/ HTTP/1.1\r\nno colon\r\n\r\n"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed request: %d", resp.StatusCode)
	}
	if resp, _ := sendRaw(t, h.addr, "CONNECT user:s3cret@a.test:1 HTTP/1.1\r\nno colon\r\n\r\n"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed CONNECT: %d", resp.StatusCode)
	}
	h.events.wait(t, StageRejected, 2)
	noTokenIn(t, h.events.all(), "s3cret")
	for _, ev := range h.events.all() {
		if strings.Contains(ev.Requested, "@") && !strings.Contains(ev.Requested, "[userinfo redacted]@") {
			t.Errorf("requested %q", ev.Requested)
		}
	}
}
