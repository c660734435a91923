package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/decision"
)

// TestHTTPForward forwards an absolute-form POST to an allowlisted
// loopback upstream: the request arrives intact, hop-by-hop and proxy
// headers removed both ways, and the event records the dialled address
// and the body bytes.
func TestHTTPForward(t *testing.T) {
	var (
		mu   sync.Mutex
		seen *http.Request
		body string
	)
	// A raw upstream, so that the response's Connection header is exactly
	// what it wrote.
	up := serveUpstream(t, "127.0.0.1:0", func(c net.Conn) {
		r, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, body = r, string(b)
		mu.Unlock()
		reply := "reply:" + string(b)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nConnection: X-Upstream-Hop\r\nX-Upstream-Hop: 1\r\n"+
			"X-Upstream-End: 2\r\nContent-Length: %d\r\n\r\n%s", len(reply), reply)
	})
	h := newHarness(t, setup{allow: []string{"svc.test"}, answers: map[string][]netip.Addr{"svc.test": addrs(standIn("127.0.0.1"))}})
	hostport := up.hostPort("svc.test")
	req := "POST http://" + hostport + "/echo?x=1 HTTP/1.1\r\n" +
		"Host: ignored.example\r\n" +
		"Proxy-Authorization: Basic c2VjcmV0OnNlY3JldA==\r\n" +
		"Proxy-Connection: keep-alive\r\n" +
		"Connection: X-Hop, close\r\n" +
		"X-Hop: 1\r\n" +
		"Keep-Alive: timeout=5\r\n" +
		"X-End-To-End: kept\r\n" +
		"Content-Length: 7\r\n\r\npayload"
	resp, got := roundTrip(t, h.addr, req)
	if resp.StatusCode != http.StatusOK || got != "reply:payload" {
		t.Fatalf("status %d body %q", resp.StatusCode, got)
	}
	if resp.Header.Get("X-Upstream-Hop") != "" || resp.Header.Get("X-Upstream-End") != "2" {
		t.Errorf("response headers %v: want X-Upstream-Hop removed and X-Upstream-End kept", resp.Header)
	}
	mu.Lock()
	r, b := seen, body
	mu.Unlock()
	if r.Method != http.MethodPost || r.RequestURI != "/echo?x=1" || r.Host != hostport || b != "payload" {
		t.Errorf("upstream saw %s %s Host %s body %q", r.Method, r.RequestURI, r.Host, b)
	}
	for _, hdr := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Hop", "Keep-Alive", "X-Forwarded-For"} {
		if v := r.Header.Get(hdr); v != "" {
			t.Errorf("upstream got %s: %q", hdr, v)
		}
	}
	if r.Header.Get("X-End-To-End") != "kept" {
		t.Errorf("end-to-end header lost: %v", r.Header)
	}
	ev := h.events.wait(t, StageClosed, 1)[0]
	if ev.Protocol != ProtocolHTTP || ev.Requested != hostport || ev.Target.String() != hostport ||
		ev.Dialled.String() != up.hostPort(standIn("127.0.0.1")) || ev.BytesUp != 7 || ev.BytesDown != int64(len("reply:payload")) || ev.Err != nil || ev.Failed() ||
		!ev.Decision.Allowed() || ev.Decision.Rule != "svc.test" {
		t.Errorf("closed event %+v", ev)
	}
	if len(ev.Resolved) != 1 || ev.Resolved[0] != netip.MustParseAddr(standIn("127.0.0.1")) {
		t.Errorf("resolved %v", ev.Resolved)
	}
}

// TestHTTPKeepAliveDecidesEachRequest sends three requests on one client
// connection: each is decided on its own (allow, deny, allow), and each
// allowed one gets its own upstream connection.
func TestHTTPKeepAliveDecidesEachRequest(t *testing.T) {
	up := serveHTTPUpstream(t, "127.0.0.1:0", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	h := newHarness(t, setup{allow: []string{up.hostPort("127.0.0.1")}})
	c := dialProxy(t, h.addr)
	br := bufio.NewReader(c)
	for i, host := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.1"} {
		fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: x\r\n\r\n", up.hostPort(host))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		want := http.StatusOK
		if host != "127.0.0.1" {
			want = http.StatusForbidden
		}
		if resp.StatusCode != want {
			t.Fatalf("request %d to %s: status %d (%s), want %d", i, host, resp.StatusCode, b, want)
		}
	}
	evs := h.events.wait(t, StageDecided, 3)
	verdicts := []decision.Verdict{evs[0].Decision.Verdict, evs[1].Decision.Verdict, evs[2].Decision.Verdict}
	if verdicts[0] != decision.Allow || verdicts[1] != decision.Deny || verdicts[2] != decision.Allow {
		t.Errorf("verdicts %v", verdicts)
	}
	if !strings.Contains(evs[1].Decision.Reason, "127.0.0.2") {
		t.Errorf("deny reason %q does not name the host", evs[1].Decision.Reason)
	}
	if d := h.dials.dialled(); len(d) != 2 {
		t.Errorf("dialled %v, want two separate upstream connections", d)
	}
}

// TestHTTPRefusals covers requests the proxy refuses by itself.
func TestHTTPRefusals(t *testing.T) {
	h := newHarness(t, setup{allow: []string{"*", "127.0.0.1:9"}, limits: Limits{MaxHeaderBytes: 4096}})
	cases := []struct {
		name, req string
		status    int
		reason    string // substring of X-Airlock-Reason
		notIn     string // must not appear in the reason
	}{
		{"userinfo", "GET http://user:hunter2@127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
			http.StatusForbidden, "carries user credentials", "hunter2"},
		{"connect-userinfo", "CONNECT user:hunter2@127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
			http.StatusForbidden, "carries user credentials", "hunter2"},
		{"connect-userinfo-no-password", "CONNECT a@127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
			http.StatusForbidden, `egress to "127.0.0.1:9" refused: the request carries user credentials`, "a@"},
		{"origin-form", "GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
			http.StatusBadRequest, "not a proxy request", ""},
		{"scheme", "GET ftp://127.0.0.1:9/f HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
			http.StatusForbidden, `scheme "ftp" is not supported`, ""},
		{"connect-no-port", "CONNECT 93.184.216.34 HTTP/1.1\r\nHost: 93.184.216.34\r\n\r\n",
			http.StatusForbidden, "no port given", ""},
		{"malformed-host", "CONNECT bad_host!.example:443 HTTP/1.1\r\nHost: x\r\n\r\n",
			http.StatusForbidden, "is malformed", ""},
		{"zone", "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\nHost: x\r\n\r\n",
			http.StatusForbidden, "deny", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := roundTrip(t, h.addr, c.req)
			reason := resp.Header.Get(ReasonHeader)
			if resp.StatusCode != c.status || !strings.Contains(reason, c.reason) {
				t.Fatalf("status %d reason %q, want %d with %q", resp.StatusCode, reason, c.status, c.reason)
			}
			if body != "airlock: "+reason+"\n" {
				t.Errorf("body %q does not carry the reason", body)
			}
			if c.notIn != "" && strings.Contains(reason+body, c.notIn) {
				t.Errorf("refusal echoes %q", c.notIn)
			}
		})
	}
	for _, method := range []string{"GET http://127.0.0.1:9/", "CONNECT 127.0.0.1:9"} {
		t.Run("header-too-large/"+method, func(t *testing.T) {
			resp, _ := roundTrip(t, h.addr, method+" HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 64<<10)+"\r\n\r\n")
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("status %d, want 431", resp.StatusCode)
			}
		})
	}
	t.Run("connect-malformed", func(t *testing.T) {
		resp, body := roundTrip(t, h.addr, "CONNECT 127.0.0.1:9 HTTP/1.1\r\nBad Header\r\n\r\n")
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(ReasonHeader) != "malformed CONNECT request" || body == "" {
			t.Fatalf("status %d reason %q", resp.StatusCode, resp.Header.Get(ReasonHeader))
		}
	})
	if d := h.dials.dialled(); len(d) != 0 {
		t.Errorf("refused requests dialled %v", d)
	}
}
