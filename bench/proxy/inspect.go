package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
)

// The HTTPS bench (-https) measures what inspection costs: HTTPS requests
// to a loopback upstream directly, through an opaque airlock tunnel,
// through airlock's inspection (no rules, and ten rules), through a
// minimal interception built on Go's httputil.ReverseProxy (CONNECT,
// hijack, TLS with a minted certificate, one http.Server per
// connection), and through goproxy's MITM when -goproxy names it. Per
// target: a new connection and its first request (p50, p90), one request
// on a kept-alive connection (p50), and a download and an upload of
// -bytes through one connection (HTTP/1.1, the median of -runs).

// benchCA is a CA for the bench's upstream and the interceptors' leaves.
type benchCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newBenchCA() (*benchCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "proxy-bench CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	return &benchCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// leaf mints a certificate for host (a name or an IP address).
func (ca *benchCA) leaf(host string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: n, Subject: pkix.Name{CommonName: host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}, nil
}

func (ca *benchCA) keyPEM() []byte {
	b, _ := x509.MarshalECPrivateKey(ca.key)
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: b})
}

func poolOf(pemBytes []byte) *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(pemBytes)
	return p
}

// httpsTarget is one way to make HTTPS requests to the upstream.
type httpsTarget struct {
	name  string
	proxy string // "" for direct
	roots *x509.CertPool
	pid   int
}

func (t httpsTarget) client(keepAlive bool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:    &tls.Config{RootCAs: t.roots},
		DisableKeepAlives:  !keepAlive,
		TLSNextProto:       map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 everywhere
		DisableCompression: true,
	}
	if t.proxy != "" {
		u, _ := url.Parse("http://" + t.proxy)
		tr.Proxy = http.ProxyURL(u)
	}
	return &http.Client{Transport: tr}
}

// runHTTPS is the HTTPS bench.
func runHTTPS(goproxyBin string, samples int, size int64, runs int) error {
	dir, err := os.MkdirTemp("", "proxy-bench-https-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	upCA, err := newBenchCA()
	if err != nil {
		return err
	}
	upFile := filepath.Join(dir, "upstream-ca.pem")
	if err := os.WriteFile(upFile, upCA.pem, 0o600); err != nil {
		return err
	}
	cert, err := upCA.leaf("127.0.0.1")
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return err
	}
	payload := make([]byte, ioSize)
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
			for n > 0 {
				m := min(n, int64(len(payload)))
				if _, err := w.Write(payload[:m]); err != nil {
					return
				}
				n -= m
			}
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d", n)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	up := ln.Addr().String()

	var children []*exec.Cmd
	defer func() {
		for _, c := range children {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	targets := []httpsTarget{{name: "direct", roots: poolOf(upCA.pem)}}
	for _, v := range []struct {
		name string
		args []string
	}{
		{"opaque", nil},
		{"inspected", []string{"-inspect", "0"}},
		{"inspect+10rules", []string{"-inspect", "10"}},
		{"rp-mitm", nil},
	} {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		caOut := filepath.Join(dir, v.name+"-ca.pem")
		args := []string{"-serve-lib", addr, "-allow", up, "-upstream-ca", upFile, "-ca-out", caOut}
		if v.name == "rp-mitm" {
			args = []string{"-serve-mitm", addr, "-upstream-ca", upFile, "-ca-out", caOut}
		}
		cmd := exec.Command(self, append(args, v.args...)...)
		cmd.Stderr = os.Stderr
		if err := start(cmd, &children, addr); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		roots := poolOf(upCA.pem)
		if v.name != "opaque" {
			b, err := os.ReadFile(caOut)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			roots = poolOf(b)
		}
		targets = append(targets, httpsTarget{name: v.name, proxy: addr, roots: roots, pid: cmd.Process.Pid})
	}
	if goproxyBin != "" {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		keyFile, certFile := filepath.Join(dir, "goproxy-ca.key"), filepath.Join(dir, "goproxy-ca.pem")
		gpCA, err := newBenchCA()
		if err != nil {
			return err
		}
		if err := os.WriteFile(keyFile, gpCA.keyPEM(), 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(certFile, gpCA.pem, 0o600); err != nil {
			return err
		}
		cmd := exec.Command(goproxyBin, "-listen", addr, "-ca-cert", certFile, "-ca-key", keyFile, "-upstream-ca", upFile)
		cmd.Stderr = os.Stderr
		if err := start(cmd, &children, addr); err != nil {
			return fmt.Errorf("goproxy: %w", err)
		}
		targets = append(targets, httpsTarget{name: "goproxy", proxy: addr, roots: poolOf(gpCA.pem), pid: cmd.Process.Pid})
	}

	base := "https://" + up
	fmt.Printf("HTTPS: %d samples per target and figure, round-robin; %d runs of %d MiB each way\n", samples, runs, size>>20)
	newConn, kept := map[string][]time.Duration{}, map[string][]time.Duration{}
	keptClients := map[string]*http.Client{}
	for _, t := range targets {
		keptClients[t.name] = t.client(true)
	}
	for i := -samples / 10; i < samples; i++ {
		for k := range targets {
			t := targets[((i+k)%len(targets)+len(targets))%len(targets)]
			d, err := timeGet(t.client(false), base+"/x")
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			d2, err := timeGet(keptClients[t.name], base+"/x")
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			if i >= 0 {
				newConn[t.name], kept[t.name] = append(newConn[t.name], d), append(kept[t.name], d2)
			}
		}
	}
	upRate, downRate := map[string][]float64{}, map[string][]float64{}
	for r := -1; r < runs; r++ {
		for k := range targets {
			t := targets[((r+k)%len(targets)+len(targets))%len(targets)]
			c := t.client(true)
			start := time.Now()
			resp, err := c.Get(fmt.Sprintf("%s/down?n=%d", base, size))
			if err != nil {
				return fmt.Errorf("%s download: %w", t.name, err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n != size {
				return fmt.Errorf("%s download: %d of %d bytes", t.name, n, size)
			}
			dd := time.Since(start)
			start = time.Now()
			resp, err = c.Post(base+"/up", "application/octet-stream", io.LimitReader(zeros{}, size))
			if err != nil {
				return fmt.Errorf("%s upload: %w", t.name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.TrimSpace(string(b)) != strconv.FormatInt(size, 10) {
				return fmt.Errorf("%s upload: the upstream got %q", t.name, b)
			}
			ud := time.Since(start)
			c.CloseIdleConnections()
			if r >= 0 {
				downRate[t.name] = append(downRate[t.name], float64(size)/dd.Seconds()/1e6)
				upRate[t.name] = append(upRate[t.name], float64(size)/ud.Seconds()/1e6)
			}
		}
	}
	fmt.Printf("\n%-16s %12s %12s %12s %12s %9s %7s %9s %7s\n", "target", "new conn p50", "new conn p90", "kept p50", "added kept", "up MB/s", "x dir", "down MB/s", "x dir")
	d := kept["direct"]
	for _, t := range targets {
		fmt.Printf("%-16s %10.1fµs %10.1fµs %10.1fµs %10.1fµs %9.0f %7.2f %9.0f %7.2f\n", t.name,
			us(pct(newConn[t.name], 50)), us(pct(newConn[t.name], 90)), us(pct(kept[t.name], 50)), us(pct(kept[t.name], 50)-pct(d, 50)),
			medianF(upRate[t.name]), medianF(upRate[t.name])/medianF(upRate["direct"]),
			medianF(downRate[t.name]), medianF(downRate[t.name])/medianF(downRate["direct"]))
	}
	return nil
}

// timeGet times one GET and the reading of its answer.
func timeGet(c *http.Client, u string) (time.Duration, error) {
	start := time.Now()
	resp, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("GET %s: %s (%s)", u, resp.Status, resp.Header.Get("X-Airlock-Reason"))
	}
	return time.Since(start), nil
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

func medianF(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Sorted(slices.Values(v))[len(v)/2]
}

// serveMITM is the reference interceptor, in the usual idiom: CONNECT,
// hijack, "200", TLS with a certificate minted for the host (cached),
// one http.Server for the connection, httputil.ReverseProxy to the
// destination with a verifying transport. It checks nothing.
func serveMITM(addr, upstreamCA, caOut string) error {
	ca, err := newBenchCA()
	if err != nil {
		return err
	}
	if err := os.WriteFile(caOut, ca.pem, 0o600); err != nil {
		return err
	}
	b, err := os.ReadFile(upstreamCA)
	if err != nil {
		return err
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: poolOf(b)}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 64}
	var mu sync.Mutex
	leaves := map[string]*tls.Certificate{}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusBadRequest)
			return
		}
		host := r.Host
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		name, _, _ := net.SplitHostPort(host)
		cfg := &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			mu.Lock()
			defer mu.Unlock()
			if l := leaves[name]; l != nil {
				return l, nil
			}
			l, err := ca.leaf(name)
			if err != nil {
				return nil, err
			}
			leaves[name] = &l
			return &l, nil
		}}
		tc := tls.Server(&bufConn{Conn: c, r: brw.Reader}, cfg)
		rp := &httputil.ReverseProxy{Transport: tr, ErrorLog: log.New(io.Discard, "", 0), Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "https", host
		}}
		srv := &http.Server{Handler: rp, ErrorLog: log.New(io.Discard, "", 0)}
		_ = srv.Serve(&oneConn{c: tc, done: make(chan struct{})})
	}))
}

// bufConn reads what a bufio.Reader holds first.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConn is a listener of one connection, which ends when it closes.
type oneConn struct {
	c    net.Conn
	done chan struct{}
	used bool
}

func (l *oneConn) Accept() (net.Conn, error) {
	if !l.used {
		l.used = true
		return &closeSignal{Conn: l.c, done: l.done}, nil
	}
	<-l.done
	return nil, net.ErrClosed
}
func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return l.c.LocalAddr() }

type closeSignal struct {
	net.Conn
	done chan struct{}
	once bool
}

func (c *closeSignal) Close() error {
	if !c.once {
		c.once = true
		close(c.done)
	}
	return c.Conn.Close()
}

// benchRules are n rules an inspected request is checked against: a deny
// rule that does not match, n-2 allow rules that do not match, and one
// that allows everything: the cost of rules that are tried.
func benchRules(n int) []egress.RuleConfig {
	if n == 0 {
		return nil
	}
	rules := []egress.RuleConfig{{Name: "no-admin", Deny: true, Paths: []string{"/**/admin/**"}}}
	for i := range n - 2 {
		rules = append(rules, egress.RuleConfig{Name: fmt.Sprintf("r%d", i), Methods: []string{"POST"},
			Paths: []string{fmt.Sprintf("/api/v%d/**", i)}, Query: map[string][]string{"k": {"v"}}})
	}
	return append(rules, egress.RuleConfig{Name: "any", Paths: []string{"/**"}})
}
