// Command proxy-bench measures CONNECT tunnel throughput and connection
// setup latency on loopback, directly and through each proxy it is given,
// in one run, and prints the ratios to the direct figures.
//
// Setup latency is the time from starting to dial until one byte has come
// back from an echo upstream through the tunnel (for a proxy: dial, CONNECT,
// the 200, then the byte). Samples are taken round-robin over the targets,
// each round starting one target further on, so that load on the machine,
// and the teardown of the connection before, hit all of them alike.
// Throughput is one tunnel carrying -bytes to a sink (upload) and from a
// source (download), after one untimed warm-up; a second table gives the
// CPU time per GB in this process (the client and the upstreams) and in
// the proxy's, and the rate the host's CPUs would allow at that cost:
// on a host with few CPUs, a relay's CPU time per byte caps its rate.
//
// Targets: "direct"; "airlock-lib", the proxy package served by this
// program in a child process with no audit log (the proxy's own cost);
// "go-floor", a plain Go CONNECT proxy in the usual idiom (parse, dial,
// 200, splice both ways; no checks, no timeouts), as a reference for what
// this host allows; "airlock", the airlock proxy command, which records
// every decision in its audit log (fdatasync) before dialling; and
// "smokescreen" when -smokescreen names its binary. bench/proxy/run.sh
// builds them all.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
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
		serveFloor = flag.String("serve-floor", "", "internal: serve the minimal CONNECT proxy on this address")
		allow      = flag.String("allow", "", "internal: comma-separated allowlist for -serve-lib")
		cpuProfile = flag.String("cpuprofile", "", "with -serve-lib: write a CPU profile of the proxy here")
		https      = flag.Bool("https", false, "run the HTTPS bench (inspection's cost) instead of the tunnel bench")
		goproxyBin = flag.String("goproxy", "", "with -https: a goproxy MITM binary (bench/proxy/goproxy) to measure too")
		serveMITM_ = flag.String("serve-mitm", "", "internal: serve the httputil.ReverseProxy interceptor on this address")
		inspect    = flag.Int("inspect", -1, "internal: with -serve-lib, inspect the allowed entry with this many rules")
		upstreamCA = flag.String("upstream-ca", "", "internal: the upstream's CA (PEM) for -serve-lib -inspect and -serve-mitm")
		caOut      = flag.String("ca-out", "", "internal: write the interceptor's CA certificate (PEM) here")
	)
	flag.Parse()
	if *serveMITM_ != "" {
		fail(serveMITM(*serveMITM_, *upstreamCA, *caOut))
	}
	if *https {
		if err := runHTTPS(*goproxyBin, *samples, *size, *runs); err != nil {
			fail(err)
		}
		return
	}
	if *serveFloor != "" {
		fail(serveMinimal(*serveFloor)) // it serves until killed
	}
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
		if err := serveLibrary(*serveLib, strings.Split(*allow, ","), *inspect, *upstreamCA, *caOut); err != nil {
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
	pid   int    // the proxy's process; 0 for direct
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
	targets = append(targets, target{"airlock-lib", libAddr, lib.Process.Pid})

	floorAddr, err := freeAddr()
	if err != nil {
		return err
	}
	floor := exec.Command(self, "-serve-floor", floorAddr)
	floor.Stderr = os.Stderr
	if err := start(floor, &children, floorAddr); err != nil {
		return fmt.Errorf("go-floor: %w", err)
	}
	targets = append(targets, target{"go-floor", floorAddr, floor.Process.Pid})

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
	targets = append(targets, target{"airlock", alAddr, children[len(children)-1].Process.Pid})

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
		targets = append(targets, target{"smokescreen", smAddr, sm.Process.Pid})
	}

	fmt.Printf("setup latency: %d samples per target, round-robin (after %d warm-up)\n", samples, samples/10)
	lat, err := setupLatency(targets, echoAddr, samples)
	if err != nil {
		return err
	}
	fmt.Printf("throughput: %d runs of %d MiB per target and direction, median (after one warm-up)\n", runs, size>>20)
	up, down, err := throughput(targets, sinkAddr, sourceAddr, size, runs)
	if err != nil {
		return err
	}
	report(targets, lat, up, down)
	return nil
}

// report prints the tables and the goals.
func report(targets []target, lat map[string][]time.Duration, up, down map[string]transfer) {
	d := lat["direct"]
	fmt.Printf("\n%-12s %10s %10s %12s %10s %7s %10s %7s\n", "target", "setup p50", "setup p90", "added p50", "up MB/s", "x dir", "down MB/s", "x dir")
	for _, t := range targets {
		l := lat[t.name]
		fmt.Printf("%-12s %8.1fµs %8.1fµs %10.1fµs %10.0f %7.2f %10.0f %7.2f\n", t.name,
			us(pct(l, 50)), us(pct(l, 90)), us(pct(l, 50)-pct(d, 50)),
			up[t.name].mbps, up[t.name].mbps/up["direct"].mbps, down[t.name].mbps, down[t.name].mbps/down["direct"].mbps)
	}
	// Where the throughput goes: CPU seconds per GB moved, in this process
	// (client and upstream servers) and in the proxy, and the rate the
	// host's CPUs would allow at that cost if they were never idle.
	ncpu := runtime.NumCPU()
	fmt.Printf("\nCPU s/GB (%d CPUs)  %8s %8s %8s %9s   %8s %8s %8s %9s\n", ncpu, "up:ends", "proxy", "total", "cap x dir", "dn:ends", "proxy", "total", "cap x dir")
	for _, t := range targets {
		u, w := up[t.name], down[t.name]
		fmt.Printf("%-19s %8.2f %8.2f %8.2f %9.2f   %8.2f %8.2f %8.2f %9.2f\n", t.name,
			u.selfCPU, u.proxyCPU, u.selfCPU+u.proxyCPU, ceiling(u, ncpu)/up["direct"].mbps,
			w.selfCPU, w.proxyCPU, w.selfCPU+w.proxyCPU, ceiling(w, ncpu)/down["direct"].mbps)
	}
	for _, name := range []string{"airlock-lib", "airlock"} {
		added := pct(lat[name], 50) - pct(d, 50)
		fmt.Printf("\n%s: throughput >= 0.9x direct: up %s, down %s; added setup p50 <= 100µs: %s",
			name, met(up[name].mbps >= 0.9*up["direct"].mbps), met(down[name].mbps >= 0.9*down["direct"].mbps), met(added <= 100*time.Microsecond))
		if _, ok := lat["smokescreen"]; ok {
			fmt.Printf("; ahead of smokescreen: setup %s, up %s, down %s",
				met(pct(lat[name], 50) < pct(lat["smokescreen"], 50)), met(up[name].mbps > up["smokescreen"].mbps), met(down[name].mbps > down["smokescreen"].mbps))
		}
	}
	fmt.Println()
}

// ceiling is the rate, in MB/s, at which ncpu CPUs kept busy would move
// data at t's CPU cost per GB.
func ceiling(t transfer, ncpu int) float64 {
	if c := t.selfCPU + t.proxyCPU; c > 0 {
		return float64(ncpu) / c * 1e3
	}
	return 0
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
