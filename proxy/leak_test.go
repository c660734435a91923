package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/egress"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The leak tests: a destination that reflects what it receives (a
// debugging endpoint does) in every part and spelling of an answer,
// reached through the real proxy by HTTP/1.1 and HTTP/2 clients of an
// inspected tunnel and by absolute-form requests. No byte the client
// reads, and no record, may hold the credential's value, as it is or as
// the standard library's decoders read it (docs/egress.md, "Credentials").

const (
	leakToken      = "gHp_S3cr3tT0k3n-V4lu3x9Q" // a header name can carry it
	leakTokenSlash = "gHp_S3cr3t/T0k3n+V4lu3="  // JSON may write \/, URLs %2F
	leakPlacehold  = "AIRLOCK-PLACEHOLDER-0123456789abcdef"
)

// reflector is the destination: reflect is handed the token the request
// carried, or, for a request without one, the last it was given.
type reflector struct {
	mu     sync.Mutex
	stored string
}

func (rf *reflector) handler(reflect func(w http.ResponseWriter, r *http.Request, tok string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		rf.mu.Lock()
		if ok {
			rf.stored = tok
		} else {
			tok = rf.stored
		}
		rf.mu.Unlock()
		reflect(w, r, tok)
	})
}

// leakHarness is an inspect harness whose upstream reflects, with a
// bearer credential for api.test's /repos/.
func leakHarness(t *testing.T, token string, h1 bool, rules []egress.RuleConfig, up http.Handler) *inspectHarness {
	t.Helper()
	return newInspectHarness(t, rules, func(s *setup) {
		s.cfg.Credentials = []egress.CredentialConfig{{Name: "gh", Host: "api.test", PathPrefixes: []string{"/repos/"}}}
		s.creds = []Credential{{Name: "gh", Header: "Authorization", Value: "Bearer " + token, Placeholder: leakPlacehold}}
		s.upstream, s.upstreamH1 = up, h1
	})
}

// dump is a request dump as a debugging endpoint writes it.
func dump(tok string) string { return "GET / HTTP/1.1\r\nAuthorization: Bearer " + tok + "\r\n" }

// escapeEvery writes every byte of s with esc.
func escapeEvery(s string, esc func(i int, c byte) string) string {
	var b strings.Builder
	for i := range len(s) {
		b.WriteString(esc(i, s[i]))
	}
	return b.String()
}

var leakCases = []struct {
	name, token string
	prime       string   // a path asked first, with the credential: the destination keeps what it got
	path        string   // the path asked (under /repos/: with the credential)
	header      []string // the client's request header
	secrets     func(tok string) []string
	reflect     func(w http.ResponseWriter, r *http.Request, tok string)
}{
	{name: "trailer", token: leakToken, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		w.Header().Set("Trailer", "X-Echo")
		io.WriteString(w, "body")
		w.Header().Set("X-Echo", "Bearer "+tok)
	}},
	{name: "trailer undeclared", token: leakToken, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set(http.TrailerPrefix+"X-Late", tok)
	}},
	{name: "trailer name", token: leakToken, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		w.Header().Set("Trailer", "X-"+tok)
		io.WriteString(w, "body")
		w.Header().Set("X-"+tok, "1")
	}},
	{name: "early hints", token: leakToken, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		w.Header().Set("Link", "</style.css?t="+tok+">; rel=preload")
		w.Header().Set("X-Hint-"+tok, "1")
		w.WriteHeader(http.StatusEarlyHints)
		clear(w.Header())
		io.WriteString(w, "body")
	}},
	{name: "header name", token: leakToken, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		w.Header()["x-"+strings.ToLower(tok)] = []string{"1"} // the client's parser changes its case
		io.WriteString(w, "body")
	}},
	{name: "json solidus", token: leakTokenSlash, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		b, _ := json.Marshal(map[string]string{"authorization": "Bearer " + tok})
		w.Header().Set("Content-Type", "application/json")
		w.Write(bytes.ReplaceAll(b, []byte("/"), []byte(`\/`))) // as PHP's json_encode writes it
	}},
	{name: "json unicode", token: leakTokenSlash, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"authorization":"%s"}`, escapeEvery(tok, func(i int, c byte) string {
			if i%2 == 0 {
				return fmt.Sprintf(`\u%04X`, c)
			}
			return fmt.Sprintf(`\u%04x`, c)
		}))
	}},
	{name: "json split across writes", token: leakTokenSlash, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		s := `{"authorization":"` + strings.ReplaceAll(tok, "/", `\/`) + `"}`
		half := strings.Index(s, `\/`) + 1 // inside the escape
		io.WriteString(w, s[:half])
		w.(http.Flusher).Flush()
		time.Sleep(10 * time.Millisecond)
		io.WriteString(w, s[half:])
	}},
	{name: "percent-encoded location", token: leakTokenSlash, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		w.Header().Set("Location", "https://login.test/?next="+escapeEvery(tok, func(_ int, c byte) string { return fmt.Sprintf("%%%02x", c) }))
		w.WriteHeader(http.StatusFound)
	}},
	{name: "set-cookie", token: leakTokenSlash, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		http.SetCookie(w, &http.Cookie{Name: "s", Value: strings.ToLower(url.QueryEscape(tok))})
		w.Header().Add("Set-Cookie", "t="+url.PathEscape(strings.ToUpper(tok)))
	}},
	{name: "html references", token: leakTokenSlash, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<p>"+escapeEvery(tok, func(i int, c byte) string {
			switch {
			case c == '/':
				return "&sol;"
			case i%2 == 0:
				return fmt.Sprintf("&#%d;", c)
			}
			return fmt.Sprintf("&#X%x;", c)
		})+"</p>")
	}},
	{name: "base64", token: leakTokenSlash, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		fmt.Fprintf(w, "%s\n%s\n%s\n", base64.StdEncoding.EncodeToString([]byte(dump(tok))),
			base64.URLEncoding.EncodeToString([]byte("x"+dump(tok))), base64.RawStdEncoding.EncodeToString([]byte("xy"+dump(tok))))
	}},
	{name: "hex", token: leakToken, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		io.WriteString(w, hex.EncodeToString([]byte(dump(tok))))
	}},
	{name: "upper case", token: leakToken, reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		io.WriteString(w, strings.ToUpper(dump(tok)))
	}},
	{name: "error page quoting the request", token: leakTokenSlash, reflect: func(w http.ResponseWriter, r *http.Request, tok string) {
		w.WriteHeader(http.StatusBadRequest)
		q := strings.NewReplacer("/", `\/`, "+", `\x2b`, "=", `\x3D`).Replace(tok) // as a JavaScript string
		fmt.Fprintf(w, "<script>var auth = \"Bearer %s\"; // %s</script>", q, r.URL)
	}},
	{name: "stored, fetched without the credential", token: leakToken, prime: "/repos/store", path: "/public/fetch", reflect: func(w http.ResponseWriter, _ *http.Request, tok string) {
		fmt.Fprintf(w, "last request: %s", dump(tok))
	}},
	{
		// A piece of the value is no form of it: the two halves, asked
		// for one at a time, would make it whole.
		name: "stored, fetched by range", token: leakToken, prime: "/repos/store", path: "/public/dump",
		header:  []string{"Range", fmt.Sprintf("bytes=%d-%d", len(dump(""))-2, len(dump(""))-2+len(leakToken)/2-1)},
		secrets: func(tok string) []string { return []string{tok[:len(tok)/2], tok[len(tok)/2:]} },
		reflect: func(w http.ResponseWriter, r *http.Request, tok string) {
			http.ServeContent(w, r, "dump.txt", time.Time{}, strings.NewReader(dump(tok)))
		},
	},
}

// TestCredentialLeaks: for each way a destination may reflect the
// credential, over each client and upstream protocol, nothing the client
// reads and nothing recorded holds the value.
func TestCredentialLeaks(t *testing.T) {
	for _, c := range leakCases {
		for _, h1 := range []bool{false, true} {
			up := "h2"
			if h1 {
				up = "h1"
			}
			t.Run(c.name+"/upstream "+up, func(t *testing.T) {
				rf := &reflector{}
				ih := leakHarness(t, c.token, h1, nil, rf.handler(c.reflect))
				secrets := []string{c.token}
				if c.secrets != nil {
					secrets = c.secrets(c.token)
				}
				path := c.path
				if path == "" {
					path = "/repos/reflect"
				}
				for _, cl := range leakClients {
					if cl.name == "absolute-form" && !h1 {
						continue // the forwarder speaks HTTP/1.1 upstream only
					}
					if c.prime != "" {
						cl.ask(t, ih, c.prime, nil)
					}
					got := cl.ask(t, ih, path, c.header)
					if s := leaked(got, secrets); s != "" {
						t.Errorf("%s: the client read %q:\n%s", cl.name, s, got)
					}
				}
				checkRecords(t, ih.harness, secrets)
			})
		}
	}
}

// checkRecords fails t when an event, as reported or as the audit stream
// records it, holds a secret.
func checkRecords(t *testing.T, h *harness, secrets []string) {
	t.Helper()
	for _, ev := range h.events.all() {
		b, _ := ev.MarshalJSON()
		a, _ := json.Marshal(AuditEvent(ev, audit.Context{}))
		if s := leaked(append(b, a...), secrets); s != "" {
			t.Errorf("a record holds %q: %s\n%s", s, b, a)
		}
	}
}

// A leakClient asks the proxy for a path of api.test and returns all it
// read: the bytes as they came where the protocol is text, and what a
// client parses of them (every 1xx and final status line and header
// field, the body, the trailers).
type leakClient struct {
	name string
	ask  func(t *testing.T, ih *inspectHarness, path string, header []string) []byte
}

var leakClients = []leakClient{
	{"inspected HTTP/1.1", func(t *testing.T, ih *inspectHarness, path string, header []string) []byte {
		_, conn := connect(t, ih.addr, "api.test:"+ih.port)
		tc := tls.Client(conn, &tls.Config{ServerName: "api.test", RootCAs: pool(ih.ca), NextProtos: []string{"http/1.1"}})
		defer tc.Close()
		return rawExchange(t, tc, "GET "+path+" HTTP/1.1\r\nHost: api.test:"+ih.port+"\r\n", header)
	}},
	{"inspected HTTP/2", func(t *testing.T, ih *inspectHarness, path string, header []string) []byte {
		var out bytes.Buffer
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
				fmt.Fprintf(&out, "%d\n", code)
				writeFields(&out, http.Header(h))
				return nil
			},
		})
		req, err := http.NewRequestWithContext(ctx, "GET", "https://api.test:"+ih.port+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		client := &http.Client{Transport: ih.client.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Fatalf("GET %s: %s, want HTTP/2", path, resp.Proto)
		}
		parsed(&out, resp)
		return out.Bytes()
	}},
	{"absolute-form", func(t *testing.T, ih *inspectHarness, path string, header []string) []byte {
		c := dialProxy(t, ih.addr)
		defer c.Close()
		return rawExchange(t, c, "GET https://api.test:"+ih.port+path+" HTTP/1.1\r\nHost: api.test:"+ih.port+"\r\n", header)
	}},
}

// rawExchange writes a request (its line and first fields in head) on c
// and returns every byte read until the server closed, then what a
// client parses of them.
func rawExchange(t *testing.T, c io.ReadWriter, head string, header []string) []byte {
	t.Helper()
	for i := 0; i+1 < len(header); i += 2 {
		head += header[i] + ": " + header[i+1] + "\r\n"
	}
	if _, err := io.WriteString(c, head+"Connection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(c)
	if len(raw) == 0 {
		t.Fatalf("no answer: %v", err)
	}
	out := bytes.NewBuffer(append([]byte(nil), raw...))
	br := bufio.NewReader(bytes.NewReader(raw))
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("parsing the answer: %v\n%s", err, raw)
			break
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			parsed(out, resp)
			break
		}
		fmt.Fprintf(out, "\n%s\n", resp.Status)
		writeFields(out, resp.Header)
	}
	return out.Bytes()
}

// parsed writes what a client reads of resp: status, fields, body,
// trailers.
func parsed(out *bytes.Buffer, resp *http.Response) {
	fmt.Fprintf(out, "\n%s\n", resp.Status)
	writeFields(out, resp.Header)
	b, _ := io.ReadAll(resp.Body)
	out.Write(b)
	out.WriteString("\n")
	writeFields(out, resp.Trailer)
}

func writeFields(out *bytes.Buffer, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "%s: %s\n", k, strings.Join(h[k], ", "))
	}
}

// The runs of text the decoders below are given.
var (
	jsonString = regexp.MustCompile(`"(?:[^"\\\x00-\x1f]|\\.)*"`)
	urlRun     = regexp.MustCompile(`[^\s"'<>]+`)
	base64Run  = regexp.MustCompile(`[A-Za-z0-9+/_-]{8,}={0,2}`)
	hexRun     = regexp.MustCompile(`[0-9a-fA-F]{16,}`)
)

// leaked returns the first of secrets that b holds, in any case, as it
// is or as the standard library decodes it (JSON strings, percent
// encoding, Go and JavaScript escapes, HTML character references, base64 in either alphabet, hex),
// or "".
func leaked(b []byte, secrets []string) string {
	texts := [][]byte{b, []byte(html.UnescapeString(string(b)))}
	for _, m := range jsonString.FindAll(b, -1) {
		var s string
		if json.Unmarshal(m, &s) == nil {
			texts = append(texts, []byte(s))
		}
		// Go's and JavaScript's escapes (\x2b; JavaScript's \/ too).
		if s, err := strconv.Unquote(strings.ReplaceAll(string(m), `\/`, "/")); err == nil {
			texts = append(texts, []byte(s))
		}
	}
	for _, m := range urlRun.FindAll(b, -1) {
		for _, unescape := range []func(string) (string, error){url.QueryUnescape, url.PathUnescape} {
			if s, err := unescape(string(m)); err == nil {
				texts = append(texts, []byte(s))
			}
		}
	}
	for _, m := range base64Run.FindAll(b, -1) {
		for off := range 4 {
			if off >= len(m) {
				break
			}
			s := strings.TrimRight(string(m[off:]), "=")
			for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				d, _ := enc.DecodeString(s[:len(s)/4*4])
				texts = append(texts, d)
			}
		}
	}
	for _, m := range hexRun.FindAll(b, -1) {
		for off := range 2 {
			d, _ := hex.DecodeString(string(m[off:]))
			texts = append(texts, d)
		}
	}
	for _, s := range secrets {
		for _, text := range texts {
			if bytes.Contains(bytes.ToLower(text), []byte(strings.ToLower(s))) {
				return s
			}
		}
	}
	return ""
}

// TestCredentialInFailureReason: an answer the transport cannot parse
// fails the request with an error that quotes what the destination
// sent; the 502's reason and the records hold none of the value.
func TestCredentialInFailureReason(t *testing.T) {
	for _, answer := range []string{
		"HTTP/1.1 200 OK\r\nX-Echo %s\r\n\r\n", // a header line without a colon
		"HTTP/1.1 %s\r\n\r\n",                  // a status line without a code
	} {
		rf := &reflector{}
		ih := leakHarness(t, leakToken, true, nil, rf.handler(func(w http.ResponseWriter, _ *http.Request, tok string) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			fmt.Fprintf(c, answer, tok)
		}))
		for _, cl := range leakClients {
			got := cl.ask(t, ih, "/repos/reflect", nil)
			if !bytes.Contains(got, []byte("502 Bad Gateway")) {
				t.Errorf("%s: %q: want a 502", cl.name, got)
			}
			if s := leaked(got, []string{leakToken}); s != "" {
				t.Errorf("%s: the client read %q:\n%s", cl.name, s, got)
			}
		}
		checkRecords(t, ih.harness, []string{leakToken})
	}
}

// TestCredentialInGoAway: an HTTP/2 destination that closes with a
// GOAWAY whose debug data is the value, which the transport's error
// quotes; the 502's reason and the records hold none of it.
func TestCredentialInGoAway(t *testing.T) {
	ih := leakHarness(t, leakToken, false, nil, http.NotFoundHandler())
	cert, err := ih.upCA.leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go goAwayWithToken(c)
		}
	}()
	raw := *ih
	raw.port = fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	for _, cl := range leakClients[:2] { // the absolute-form forwarder speaks HTTP/1.1 upstream
		got := cl.ask(t, &raw, "/repos/reflect", nil)
		if !bytes.Contains(got, []byte("502 Bad Gateway")) || !bytes.Contains(got, []byte("GOAWAY")) {
			t.Errorf("%s: %q: want a 502 for the GOAWAY", cl.name, got)
		}
		if s := leaked(got, []string{leakToken}); s != "" {
			t.Errorf("%s: the client read %q:\n%s", cl.name, s, got)
		}
	}
	checkRecords(t, ih.harness, []string{leakToken})
}

// goAwayWithToken serves one HTTP/2 connection: it answers the first
// request with a GOAWAY whose debug data is the bearer token it carried.
func goAwayWithToken(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	fr := http2.NewFramer(c, br)
	fr.WriteSettings()
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			fields, _ := dec.DecodeFull(f.HeaderBlockFragment())
			for _, hf := range fields {
				if tok, ok := strings.CutPrefix(hf.Value, "Bearer "); ok && hf.Name == "authorization" {
					fr.WriteGoAway(f.StreamID, http2.ErrCodeInternal, []byte(tok))
				}
			}
			return
		}
	}
}

// TestCredentialHostUpgrade: a WebSocket to a credential's host, even on
// a request that does not carry it, is refused: what comes after the
// upgrade could not be searched (the destination keeps what an earlier
// request brought it).
func TestCredentialHostUpgrade(t *testing.T) {
	rf := &reflector{}
	rules := []egress.RuleConfig{
		{Name: "repos", PathPrefixes: []string{"/repos/"}},
		{Name: "live", Methods: []string{"GET"}, Paths: []string{"/live"}, WebSocket: true},
	}
	ih := leakHarness(t, leakToken, true, rules, rf.handler(func(w http.ResponseWriter, r *http.Request, tok string) {
		if r.URL.Path != "/live" {
			return
		}
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nframe: %s", tok)
		brw.Flush()
	}))
	cl := leakClients[0] // HTTP/1.1: an HTTP/2 client does not upgrade
	cl.ask(t, ih, "/repos/store", nil)
	got := cl.ask(t, ih, "/live", []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version", "13"})
	if s := leaked(got, []string{leakToken}); s != "" {
		t.Errorf("the client read %q:\n%s", s, got)
	}
	if !bytes.Contains(got, []byte("502 Bad Gateway")) {
		t.Errorf("%q: want a 502", got)
	}
	checkRecords(t, ih.harness, []string{leakToken})
}

// TestCredentialHostAnswerKept: an answer from a credential's host keeps
// what holds no value: its 1xx responses and its trailers are scrubbed,
// not dropped.
func TestCredentialHostAnswerKept(t *testing.T) {
	ih := leakHarness(t, leakToken, false, nil, (&reflector{}).handler(func(w http.ResponseWriter, _ *http.Request, tok string) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		clear(w.Header())
		w.Header().Set("Trailer", "Grpc-Status, X-Token")
		io.WriteString(w, "body")
		w.Header().Set("Grpc-Status", "0")
		w.Header().Set("X-Token", tok)
	}))
	for _, cl := range leakClients[:2] {
		got := string(cl.ask(t, ih, "/repos/x", nil))
		for _, want := range []string{"Link: </app.css>; rel=preload", "body\n", "Grpc-Status: 0", "X-Token: [credential gh redacted]"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: no %q in\n%s", cl.name, want, got)
			}
		}
	}
}
