package proxy

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
)

// TestRefusalsRecorded: what the proxy refuses before any egress decision
// (SOCKS4 and SOCKS4a, malformed SOCKS5 greetings and requests, malformed
// and oversized requests, whether the proxy or its HTTP server parses
// them, requests that are not proxy requests) reaches the event callback,
// with a reason and the bytes the client sent, exactly as sent.
func TestRefusalsRecorded(t *testing.T) {
	h := newHarness(t, setup{allow: []string{"127.0.0.1:9"}, limits: Limits{MaxHeaderBytes: 4096}})
	h.p.rejects.burst = 100 // one event per case (TestRefusalFloodCoalesced tests the bound)
	big := strings.Repeat("a", 8<<10)
	cases := []struct {
		name, send string
		proto      Protocol
		requested  string
		reason     string
	}{
		{"socks4", "\x04\x01\x00\x50\x7f\x00\x00\x01user\x00", ProtocolSOCKS4, "127.0.0.1:80",
			`SOCKS4 request for "127.0.0.1:80" refused: SOCKS4 and SOCKS4a are not supported (use SOCKS5 or HTTP CONNECT)`},
		{"socks4a", "\x04\x01\x01\xbb\x00\x00\x00\x01\x00ex\xffample.com\x00", ProtocolSOCKS4, "ex\xffample.com:443",
			`SOCKS4 request for "ex\xffample.com:443" refused: SOCKS4 and SOCKS4a are not supported (use SOCKS5 or HTTP CONNECT)`},
		{"socks5 no methods", "\x05\x00", ProtocolSOCKS5, "",
			"malformed SOCKS5 greeting refused: it offers no methods"},
		{"socks5 password only", "\x05\x01\x02", ProtocolSOCKS5, "",
			"SOCKS5 greeting refused: it offers no method the proxy accepts (only no authentication)"},
		{"socks5 address type", "\x05\x01\x00\x05\x01\x00\x09", ProtocolSOCKS5, "",
			"malformed SOCKS5 request refused: address type 9"},
		{"socks5 request version", "\x05\x01\x00\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50", ProtocolSOCKS5, "",
			"malformed SOCKS5 request refused: request has version 4"},
		{"connect bad header", "CONNECT 127.0.0.1:9 HTTP/1.1\r\nBad Header\r\n\r\n", ProtocolConnect, "CONNECT 127.0.0.1:9 HTTP/1.1",
			`malformed CONNECT request refused: "malformed MIME header: missing colon: \"Bad Header\""`},
		{"connect bad line", "CONNECT \x1b]0;x\x07 HTTP/9\r\n\r\n", ProtocolConnect, "CONNECT \x1b]0;x\x07 HTTP/9",
			`malformed CONNECT request refused: "malformed HTTP version \"HTTP/9\""`},
		{"connect header too large", "CONNECT 127.0.0.1:9 HTTP/1.1\r\nX-Big: " + big + "\r\n\r\n", ProtocolConnect, "CONNECT 127.0.0.1:9 HTTP/1.1",
			"CONNECT request refused: its header is larger than 4096 bytes"},
		{"http bad header", "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", ProtocolHTTP, "GET http://127.0.0.1:9/ HTTP/1.1",
			`malformed HTTP request refused: the proxy's HTTP server answered "HTTP/1.1 400 Bad Request"`},
		{"http no host", "GET http://127.0.0.1:9/ HTTP/1.1\r\n\r\n", ProtocolHTTP, "GET http://127.0.0.1:9/ HTTP/1.1",
			`malformed HTTP request refused: the proxy's HTTP server answered "HTTP/1.1 400 Bad Request: missing required Host header"`},
		{"http header too large", "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\nX-Big: " + big + "\r\n\r\n", ProtocolHTTP, "GET http://127.0.0.1:9/ HTTP/1.1",
			`malformed HTTP request refused: the proxy's HTTP server answered "HTTP/1.1 431 Request Header Fields Too Large"`},
		{"not a proxy request", "GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", ProtocolHTTP, "GET /index.html",
			reasonNotProxy},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := dialProxy(t, h.addr)
			if _, err := io.WriteString(conn, c.send); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.ReadAll(conn)
			conn.Close()
			ev := h.events.wait(t, StageRejected, i+1)[i]
			if ev.Protocol != c.proto || ev.Requested != c.requested || ev.Decision.Reason != c.reason ||
				ev.Decision.Allowed() || ev.Count != 1 || !strings.HasPrefix(ev.Client, "127.0.0.1:") {
				t.Errorf("rejected event %+v\nwant protocol %s, requested %q, reason %q", ev, c.proto, c.requested, c.reason)
			}
			// The audit record keeps the client's bytes as they came.
			a := AuditEvent(ev, audit.Context{})
			if a.Kind != audit.KindEgress || a.Decision != audit.DecisionDeny || a.Reason != c.reason ||
				a.Context.Details["requested"] != c.requested || a.Context.Protocol != string(c.proto) {
				t.Errorf("audit event %+v", a)
			}
		})
	}
	if n := len(h.events.stage(StageDecided)); n != 0 {
		t.Errorf("%d decisions for requests that never reached the gate", n)
	}
	if d := h.dials.dialled(); len(d) != 0 {
		t.Errorf("refused requests dialled %v", d)
	}
}

// TestRefusalFloodCoalesced: a flood of refusals reaches the event
// callback as a bounded number of events whose counts add up to the
// flood, not one event each.
func TestRefusalFloodCoalesced(t *testing.T) {
	h := newHarness(t, setup{allow: []string{"127.0.0.1:9"}})
	const n = 300
	for range n {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "\x04\x01\x00\x50\x7f\x00\x00\x01\x00")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.ReadAll(c)
		c.Close()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		total := 0
		evs := h.events.stage(StageRejected)
		for _, ev := range evs {
			total += ev.Count
		}
		if total == n {
			// At most a burst per window and one count per kind for each.
			if len(evs) >= n/2 {
				t.Errorf("%d events for %d refusals: not coalesced", len(evs), n)
			}
			if last := evs[len(evs)-1]; last.Count > 1 && !strings.Contains(last.Decision.Reason, " refusals like this one within 1s, counted rather than recorded one by one; the first: SOCKS4 request for ") {
				t.Errorf("summary reason %q", last.Decision.Reason)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals counted in %d events, want %d", total, len(evs), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCloseFlushesRefusals: refusals held back when the proxy closes are
// reported by Close.
func TestCloseFlushesRefusals(t *testing.T) {
	var got []Event
	r := newRejects(func(ev Event) { got = append(got, ev) })
	for range rejectBurst + 5 {
		r.add(rejectHTTP, Event{Requested: "x"})
	}
	if len(got) != rejectBurst {
		t.Fatalf("%d events before close, want the burst of %d", len(got), rejectBurst)
	}
	r.close()
	if len(got) != rejectBurst+1 || got[rejectBurst].Count != 5 {
		t.Fatalf("after close: %d events, last %+v", len(got), got[len(got)-1])
	}
}
