// Command proxy-bench measures CONNECT tunnel throughput and connection
// setup latency on loopback, directly and through each proxy it is given,
// in one run, and prints the ratios to the direct figures.
//
// Setup latency is the time from starting to dial until one byte has come
// back from an echo upstream through the tunnel (for a proxy: dial, CONNECT,
// the 200, then the byte). Samples are taken round-robin over the targets so
// that load on the machine hits all of them alike. Throughput is one tunnel
// carrying -bytes to a sink (upload) and from a source (download).
//
// Targets: "direct"; "airlock-lib", the proxy package served by this
// program in a child process with no audit log (the proxy's own cost);
// "airlock", the airlock proxy command, which records every decision in
// its audit log (fdatasync) before dialling; and "smokescreen" when
// -smokescreen names its binary. bench/proxy/run.sh builds them all.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/proxy"
)

func main() {
	var (
		airlockBin = flag.String("airlock", "", "airlock binary (the proxy command)")
		smokeBin   = flag.String("smokescreen", "", "smokescreen binary (optional)")
		auditDir   = flag.String("audit-dir", os.TempDir(), "directory for the airlock command's audit log")
		samples    = flag.Int("n", 2000, "setup samples per target")
		size       = flag.Int64("bytes", 1<<30, "bytes per throughput run")
		runs       = flag.Int("runs", 5, "throughput runs per target and direction")
		serveLib   = flag.String("serve-lib", "", "internal: serve the proxy package on this address, allowing -allow")
		allow      = flag.String("allow", "", "internal: comma-separated allowlist for -serve-lib")
		cpuProfile = flag.String("cpuprofile", "", "with -serve-lib: write a CPU profile of the proxy here")
	)
	flag.Parse()
	if *serveLib != "" {
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err != nil {
				fail(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fail(err)
			}
			defer pprof.StopCPUProfile()
		}
		if err := serveLibrary(*serveLib, strings.Split(*allow, ",")); err != nil {
			fail(err)
		}
		return
	}
	if *airlockBin == "" {
		fail(fmt.Errorf("-airlock is required"))
	}
	if err := run(*airlockBin, *smokeBin, *auditDir, *samples, *size, *runs); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "proxy-bench: %v\n", err)
	os.Exit(1)
}

// target is one way to reach the upstreams.
type target struct {
	name  string
	proxy string // "" for direct
}

func run(airlockBin, smokeBin, auditDir string, samples int, size int64, runs int) error {
	echoAddr, err := serve(echo)
	if err != nil {
		return err
	}
	sinkAddr, err := serve(func(c net.Conn) { sink(c, size) })
	if err != nil {
		return err
	}
	sourceAddr, err := serve(func(c net.Conn) { source(c, size) })
	if err != nil {
		return err
	}
	allowed := []string{echoAddr, sinkAddr, sourceAddr}

	targets := []target{{name: "direct"}}
	var children []*exec.Cmd
	defer func() {
		for _, c := range children {
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	libAddr, err := freeAddr()
	if err != nil {
		return err
	}
	lib := exec.Command(self, "-serve-lib", libAddr, "-allow", strings.Join(allowed, ","))
	lib.Stderr = os.Stderr
	if err := start(lib, &children, libAddr); err != nil {
		return fmt.Errorf("airlock-lib: %w", err)
	}
	targets = append(targets, target{"airlock-lib", libAddr})

	dir, err := os.MkdirTemp(auditDir, "proxy-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pol := filepath.Join(dir, "policy.json")
	polJSON := fmt.Sprintf(`{"toolScopes": {}, "egress": {"taskAllowlist": {"bench": ["%s"]}}}`, strings.Join(allowed, `", "`))
	if err := os.WriteFile(pol, []byte(polJSON), 0o600); err != nil {
		return err
	}
	alAddr, err := startAirlock(airlockBin, pol, filepath.Join(dir, "audit.jsonl"), &children)
	if err != nil {
		return fmt.Errorf("airlock: %w", err)
	}
	targets = append(targets, target{"airlock", alAddr})

	if smokeBin != "" {
		smAddr, err := freeAddr()
		if err != nil {
			return err
		}
		_, port, _ := net.SplitHostPort(smAddr)
		sm := exec.Command(smokeBin, "--listen-ip", "127.0.0.1", "--listen-port", port, "--allow-range", "127.0.0.1/32")
		if err := start(sm, &children, smAddr); err != nil {
			return fmt.Errorf("smokescreen: %w", err)
		}
		targets = append(targets, target{"smokescreen", smAddr})
	}

	fmt.Printf("setup latency: %d samples per target, round-robin (after %d warm-up)\n", samples, samples/10)
	lat, err := setupLatency(targets, echoAddr, samples)
	if err != nil {
		return err
	}
	fmt.Printf("throughput: %d runs of %d MiB per target and direction, median\n", runs, size>>20)
	up, down, err := throughput(targets, sinkAddr, sourceAddr, size, runs)
	if err != nil {
		return err
	}
	report(targets, lat, up, down)
	return nil
}

// report prints the table and the goals.
func report(targets []target, lat map[string][]time.Duration, up, down map[string]float64) {
	d := lat["direct"]
	fmt.Printf("\n%-12s %10s %10s %12s %10s %7s %10s %7s\n", "target", "setup p50", "setup p90", "added p50", "up MB/s", "x dir", "down MB/s", "x dir")
	for _, t := range targets {
		l := lat[t.name]
		fmt.Printf("%-12s %8.1fµs %8.1fµs %10.1fµs %10.0f %7.2f %10.0f %7.2f\n", t.name,
			us(pct(l, 50)), us(pct(l, 90)), us(pct(l, 50)-pct(d, 50)),
			up[t.name], up[t.name]/up["direct"], down[t.name], down[t.name]/down["direct"])
	}
	for _, name := range []string{"airlock-lib", "airlock"} {
		added := pct(lat[name], 50) - pct(d, 50)
		fmt.Printf("\n%s: throughput >= 0.9x direct: up %s, down %s; added setup p50 <= 100µs: %s",
			name, met(up[name] >= 0.9*up["direct"]), met(down[name] >= 0.9*down["direct"]), met(added <= 100*time.Microsecond))
		if _, ok := lat["smokescreen"]; ok {
			fmt.Printf("; ahead of smokescreen: setup %s, up %s, down %s",
				met(pct(lat[name], 50) < pct(lat["smokescreen"], 50)), met(up[name] > up["smokescreen"]), met(down[name] > down["smokescreen"]))
		}
	}
	fmt.Println()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// setupLatency samples each target round-robin.
func setupLatency(targets []target, echoAddr string, samples int) (map[string][]time.Duration, error) {
	out := map[string][]time.Duration{}
	for i := -samples / 10; i < samples; i++ {
		for _, t := range targets {
			d, err := setupOnce(t, echoAddr)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			if i >= 0 {
				out[t.name] = append(out[t.name], d)
			}
		}
	}
	return out, nil
}

func setupOnce(t target, echoAddr string) (time.Duration, error) {
	start := time.Now()
	c, err := open(t, echoAddr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Write([]byte{'x'}); err != nil {
		return 0, err
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// open connects to addr, directly or through a CONNECT tunnel.
func open(t target, addr string) (net.Conn, error) {
	if t.proxy == "" {
		return net.Dial("tcp", addr)
	}
	c, err := net.Dial("tcp", t.proxy)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %s", addr, resp.Status)
	}
	if br.Buffered() > 0 {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: data after the response", addr)
	}
	return c, nil
}

// throughput measures each target's upload and download, median of runs.
func throughput(targets []target, sinkAddr, sourceAddr string, size int64, runs int) (up, down map[string]float64, err error) {
	upRuns, downRuns := map[string][]float64{}, map[string][]float64{}
	buf := make([]byte, 256<<10)
	for range runs {
		for _, t := range targets {
			u, err := upload(t, sinkAddr, size, buf)
			if err != nil {
				return nil, nil, fmt.Errorf("%s upload: %w", t.name, err)
			}
			d, err := download(t, sourceAddr, size, buf)
			if err != nil {
				return nil, nil, fmt.Errorf("%s download: %w", t.name, err)
			}
			upRuns[t.name] = append(upRuns[t.name], u)
			downRuns[t.name] = append(downRuns[t.name], d)
		}
	}
	up, down = map[string]float64{}, map[string]float64{}
	for name := range upRuns {
		slices.Sort(upRuns[name])
		slices.Sort(downRuns[name])
		up[name] = upRuns[name][len(upRuns[name])/2]
		down[name] = downRuns[name][len(downRuns[name])/2]
	}
	return up, down, nil
}

func upload(t target, sinkAddr string, size int64, buf []byte) (float64, error) {
	c, err := open(t, sinkAddr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	for n := int64(0); n < size; n += int64(len(buf)) {
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		return 0, err
	}
	return mbps(size, time.Since(start)), nil
}

func download(t target, sourceAddr string, size int64, buf []byte) (float64, error) {
	c, err := open(t, sourceAddr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Write([]byte{1}); err != nil { // start the source
		return 0, err
	}
	n, err := io.CopyBuffer(io.Discard, c, buf)
	if err != nil {
		return 0, err
	}
	if n != size {
		return 0, fmt.Errorf("got %d bytes, want %d", n, size)
	}
	return mbps(size, time.Since(start)), nil
}

func mbps(n int64, d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }

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
	if n, _ := io.CopyN(io.Discard, c, size); n == size {
		_, _ = c.Write([]byte{1})
	}
}

// source waits for one byte, then sends size bytes and closes.
func source(c net.Conn, size int64) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return
	}
	buf := make([]byte, 256<<10)
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
func serveLibrary(addr string, allow []string) error {
	g, err := egress.Compile(egress.Config{TaskAllowlist: map[string][]string{"bench": allow}})
	if err != nil {
		return err
	}
	p, err := proxy.New(proxy.Config{Task: "bench", Gate: g})
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

