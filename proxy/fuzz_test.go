package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
)

// FuzzSOCKSRequest feeds arbitrary bytes to the SOCKS5 parsers: they never
// panic, never read past the message they parse, and a parsed request
// re-encodes to the bytes it came from.
func FuzzSOCKSRequest(f *testing.F) {
	f.Add([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80})
	f.Add(append([]byte{5, 2, 0, 2, 5, 1, 0, 3, 8}, "svc.test\x01\xbb"...))
	f.Add(append([]byte{5, 1, 0, 5, 1, 0, 4}, append(make([]byte, 16), 0, 80)...))
	f.Add([]byte{5, 1, 0, 5, 2, 0, 9})
	f.Add([]byte{5, 0})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 3, 0, 0, 80, 'x'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		if _, err := readGreeting(r, socksNoAuth); err != nil {
			return
		}
		start := len(data) - r.Len()
		req, err := readRequest(r)
		if err != nil {
			return
		}
		msg := data[start : len(data)-r.Len()]
		var enc []byte
		enc = append(enc, 5, req.cmd, msg[2], msg[3])
		switch msg[3] {
		case atypDomain:
			enc = append(enc, byte(len(req.host)))
			enc = append(enc, req.host...)
		default:
			enc = append(enc, netip.MustParseAddr(req.host).AsSlice()...)
		}
		enc = binary.BigEndian.AppendUint16(enc, req.port)
		if !bytes.Equal(enc, msg) {
			t.Fatalf("request % x parsed as %+v, re-encoded as % x", msg, req, enc)
		}
	})
}

// FuzzSOCKS4Request feeds arbitrary bytes to the SOCKS4 parser: it never
// panics, and a parsed request names the port and the address (or the
// SOCKS4a host, as sent) the bytes carry.
func FuzzSOCKS4Request(f *testing.F) {
	f.Add([]byte("\x04\x01\x00\x50\x7f\x00\x00\x01user\x00"))
	f.Add([]byte("\x04\x01\x01\xbb\x00\x00\x00\x01\x00ex\xffample.com\x00"))
	f.Add([]byte("\x04\x01\x00"))
	f.Add([]byte("\x04\x02\x00\x50\x00\x00\x00\x09no-terminator"))
	f.Fuzz(func(t *testing.T, data []byte) {
		requested, err := readSOCKS4(bufio.NewReaderSize(bytes.NewReader(data), 64))
		if err != nil {
			return
		}
		host, port, serr := net.SplitHostPort(requested)
		if serr != nil || port != strconv.Itoa(int(binary.BigEndian.Uint16(data[2:4]))) {
			t.Fatalf("% x parsed as %q", data, requested)
		}
		if data[4] == 0 && data[5] == 0 && data[6] == 0 && data[7] != 0 {
			if !bytes.Contains(data[8:], []byte(host+"\x00")) {
				t.Fatalf("% x: SOCKS4a host %q not in the request", data, host)
			}
		} else if host != netip.AddrFrom4([4]byte(data[4:8])).String() {
			t.Fatalf("% x: address %q", data, host)
		}
	})
}

// fuzzProxy is one proxy shared by a fuzzing run: a loopback echo
// upstream is the only destination allowed, and any other dial is
// recorded as a failure.
var fuzzProxy struct {
	once    sync.Once
	addr    string
	up      netip.AddrPort
	badDial atomic.Pointer[string]
}

func startFuzzProxy(f *testing.F) {
	fuzzProxy.once.Do(func() {
		uln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Fatal(err)
		}
		fuzzProxy.up = uln.Addr().(*net.TCPAddr).AddrPort()
		go func() {
			for {
				c, err := uln.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); echo(c) }()
			}
		}()
		g, err := egress.Compile(egress.Config{TaskAllowlist: map[string][]string{
			"fuzz": {fuzzProxy.up.String(), fmt.Sprintf("svc.test:%d", fuzzProxy.up.Port())},
		}})
		if err != nil {
			f.Fatal(err)
		}
		var d net.Dialer
		p, err := New(Config{
			Task: "fuzz", Gate: g,
			Resolver: &fakeResolver{answers: map[string][]netip.Addr{"svc.test": addrs("127.0.0.1")}},
			Dialer: DialerFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr != fuzzProxy.up.String() {
					fuzzProxy.badDial.Store(&addr)
					return nil, fmt.Errorf("fuzz: refusing to dial %s", addr)
				}
				return d.DialContext(ctx, network, addr)
			}),
			Limits: Limits{HandshakeTimeout: 500 * time.Millisecond, IdleTimeout: 2 * time.Second, MaxHeaderBytes: 4096},
		})
		if err != nil {
			f.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Fatal(err)
		}
		fuzzProxy.addr = ln.Addr().String()
		go p.Serve(ln)
	})
}

// FuzzProxyConn sends arbitrary bytes as a whole client connection: the
// proxy never panics or hangs, dials nothing but the allowed upstream, and
// keeps serving.
func FuzzProxyConn(f *testing.F) {
	startFuzzProxy(f)
	port := fuzzProxy.up.Port()
	for _, s := range []string{
		fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\nhello", port),
		fmt.Sprintf("CONNECT svc.test:%d HTTP/1.1\r\n\r\n", port),
		"CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n",
		fmt.Sprintf("GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n", port),
		fmt.Sprintf("POST http://svc.test:%d/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", port),
		"GET http://user:pw@x/ HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		string([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, byte(port >> 8), byte(port), 'h', 'i'}),
		string(append([]byte{5, 1, 0, 5, 1, 0, 3, 8}, fmt.Sprintf("svc.test%c%c", byte(port>>8), byte(port))...)),
		string([]byte{5, 1, 0, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0}),
		string([]byte{4, 1, 0, 80, 127, 0, 0, 1, 0}),
		"\x16\x03\x01\x00\x05hello",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := net.Dial("tcp", fuzzProxy.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Write(data) // the proxy may refuse and close early
		_ = c.(*net.TCPConn).CloseWrite()
		_, err = io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the proxy neither answered nor closed for 10s after % q", data)
		}
		if bad := fuzzProxy.badDial.Load(); bad != nil {
			t.Fatalf("the proxy dialled %s", *bad)
		}
	})
}

// FuzzSniff feeds arbitrary first bytes of a tunnel to sniff and checks
// that it never loses a byte it read, never reads past what it needs to
// decide, and that a TLS verdict comes only with a ClientHello read whole.
func FuzzSniff(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
	f.Add([]byte("\r\n\r\nPOST /x HTTP/1.1\r\n"))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00})
	f.Add([]byte("SSH-2.0-OpenSSH_9.0\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		defer a.Close()
		go func() {
			_, _ = b.Write(in)
			b.Close()
		}()
		fr, err := sniff(a, nil)
		if !bytes.HasPrefix(in, fr.data) {
			t.Fatalf("sniff returned %q, not a prefix of what was sent", fr.data)
		}
		if fr.kind == firstTLS && err == nil && len(fr.data) < 5 {
			t.Fatalf("a ClientHello of %d bytes", len(fr.data))
		}
		if fr.kind == firstHTTP {
			if k, sure := sniffKind(fr.data); k != firstHTTP || !sure && err == nil {
				t.Fatalf("HTTP verdict on %q", fr.data)
			}
		}
	})
}
