package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/proxy"
)

// serve runs handle for every connection to a new loopback listener.
func serve(handle func(net.Conn)) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); handle(c) }()
		}
	}()
	return ln.Addr().String(), nil
}

func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// sink reads size bytes, then answers with one byte. (It does not wait
// for the client's half-close: smokescreen closes the whole tunnel when
// one side ends.)
func sink(c net.Conn, size int64) {
	if n, _ := drain(c, size, make([]byte, ioSize)); n == size {
		_, _ = c.Write([]byte{1})
	}
}

// ioSize is the size of every read and write the endpoints make, both
// ways, direct or through a proxy.
const ioSize = 256 << 10

// drain reads from c into buf until it has read size bytes or c ends. It
// reads c itself, with buf: io.Copy to io.Discard would read in the
// latter's own 8 KiB pieces, whatever buffer it is given.
func drain(c net.Conn, size int64, buf []byte) (int64, error) {
	var n int64
	for n < size {
		m, err := c.Read(buf[:min(int64(len(buf)), size-n)])
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// source waits for one byte, then sends size bytes and closes.
func source(c net.Conn, size int64) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return
	}
	buf := make([]byte, ioSize)
	for n := int64(0); n < size; n += int64(len(buf)) {
		if _, err := c.Write(buf[:min(int64(len(buf)), size-n)]); err != nil {
			return
		}
	}
}

// freeAddr returns a loopback address with a free port.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// start starts cmd and waits until addr accepts connections.
func start(cmd *exec.Cmd, children *[]*exec.Cmd, addr string) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	*children = append(*children, cmd)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("nothing listens on %s", addr)
}

// startAirlock runs the airlock proxy command and returns its address.
func startAirlock(bin, pol, auditFile string, children *[]*exec.Cmd) (string, error) {
	cmd := exec.Command(bin, "--policy", pol, "proxy", "--task", "bench", "--listen", "127.0.0.1:0", "--audit", auditFile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	*children = append(*children, cmd)
	re := regexp.MustCompile(`serving HTTP and SOCKS5 on (\S+)`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stderr) }() // one line per decision
			return m[1], nil
		}
	}
	return "", fmt.Errorf("exited before listening")
}

// serveLibrary serves the proxy package with no audit log until SIGTERM.
// With rules >= 0, the first entry of allow is inspected with that many
// rules (benchRules), its destination verified against upstreamCA, and
// the proxy's CA certificate written to caOut.
func serveLibrary(addr string, allow []string, rules int, upstreamCA, caOut string) error {
	cfg := egress.Config{TaskAllowlist: map[string][]string{"bench": allow}}
	var ca *proxy.CA
	if rules >= 0 {
		cfg.Entries = map[string]map[string]egress.EntryConfig{"bench": {allow[0]: {Inspect: true, Rules: benchRules(rules), UpstreamCA: upstreamCA}}}
		var err error
		if ca, err = proxy.NewCA("proxy-bench session CA", time.Hour); err != nil {
			return err
		}
		if err := os.WriteFile(caOut, ca.CertPEM(), 0o600); err != nil {
			return err
		}
	}
	g, err := egress.Compile(cfg)
	if err != nil {
		return err
	}
	p, err := proxy.New(proxy.Config{Task: "bench", Gate: g, CA: ca})
	if err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{KeepAlive: -1}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() { <-ctx.Done(); p.Close() }()
	if err := p.Serve(ln); err != proxy.ErrClosed {
		return err
	}
	return nil
}

// serveMinimal is the floor: a CONNECT proxy with nothing but the
// protocol, for reference. It checks nothing: it is only ever asked for
// the loopback upstreams of this program. It returns only on an error.
func serveMinimal(addr string) error {
	ln, err := (&net.ListenConfig{KeepAlive: -1}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return err
	}
	d := net.Dialer{KeepAlive: -1}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err != nil {
				return
			}
			up, err := d.Dial("tcp", req.Host)
			if err != nil {
				return
			}
			defer up.Close()
			if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
				return
			}
			go func() { _, _ = io.Copy(up, c); _ = up.(*net.TCPConn).CloseWrite() }()
			_, _ = io.Copy(c, up)
		}()
	}
}
