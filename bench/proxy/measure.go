package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// setupLatency samples each target round-robin. Each round starts one
// target further on, so that every target follows every other equally
// often: a sample shares the CPUs with the teardown of the connection
// before it, which is cheap after a direct connection and dearer after a
// proxied one.
func setupLatency(targets []target, echoAddr string, samples int) (map[string][]time.Duration, error) {
	out := map[string][]time.Duration{}
	n := len(targets)
	for i := -samples / 10; i < samples; i++ {
		for k := range n {
			t := targets[((i+k)%n+n)%n]
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

// open connects to addr, directly or through a CONNECT tunnel. The
// client does what any CONNECT client must, and no more: one write of the
// request, and reads until the end of the response header, which must
// say 200 and be followed by nothing (the upstreams speak only when
// spoken to). It is the same for every proxy.
func open(t target, addr string) (net.Conn, error) {
	if t.proxy == "" {
		return net.Dial("tcp", addr)
	}
	c, err := net.Dial("tcp", t.proxy)
	if err != nil {
		return nil, err
	}
	if err := handshake(c, addr); err != nil {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %w", addr, err)
	}
	return c, nil
}

// handshake sends CONNECT for addr on c and reads the response header.
func handshake(c net.Conn, addr string) error {
	req := "CONNECT " + addr + " HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	var buf [1024]byte
	n := 0
	for {
		m, err := c.Read(buf[n:])
		if err != nil {
			return err
		}
		n += m
		end := bytes.Index(buf[:n], []byte("\r\n\r\n"))
		switch {
		case end >= 0 && end+4 != n:
			return fmt.Errorf("data after the response")
		case end >= 0:
			if !bytes.HasPrefix(buf[:n], []byte("HTTP/1.")) || n < 12 || string(buf[8:12]) != " 200" {
				line, _, _ := bytes.Cut(buf[:n], []byte("\r\n"))
				return fmt.Errorf("response %q", line)
			}
			return nil
		case n == len(buf):
			return fmt.Errorf("response header longer than %d bytes", len(buf))
		}
	}
}

// transfer is one throughput figure: the rate, and the CPU time spent per
// GB moved by this process (the client and the upstream servers) and by
// the proxy's process.
type transfer struct {
	mbps              float64
	selfCPU, proxyCPU float64 // seconds per GB
}

// throughput measures each target's upload and download, after one
// untimed warm-up each: the median of runs, each round in a rotated order.
func throughput(targets []target, sinkAddr, sourceAddr string, size int64, runs int) (up, down map[string]transfer, err error) {
	upRuns, downRuns := map[string][]transfer{}, map[string][]transfer{}
	buf := make([]byte, ioSize)
	n := len(targets)
	for r := -1; r < runs; r++ {
		for k := range n {
			t := targets[((r+k)%n+n)%n]
			u, err := measured(t, func() (float64, error) { return upload(t, sinkAddr, size, buf) })
			if err != nil {
				return nil, nil, fmt.Errorf("%s upload: %w", t.name, err)
			}
			d, err := measured(t, func() (float64, error) { return download(t, sourceAddr, size, buf) })
			if err != nil {
				return nil, nil, fmt.Errorf("%s download: %w", t.name, err)
			}
			if r >= 0 {
				upRuns[t.name] = append(upRuns[t.name], u.per(size))
				downRuns[t.name] = append(downRuns[t.name], d.per(size))
			}
		}
	}
	up, down = map[string]transfer{}, map[string]transfer{}
	for name := range upRuns {
		up[name], down[name] = median(upRuns[name]), median(downRuns[name])
	}
	return up, down, nil
}

// rawTransfer is a transfer's rate and CPU seconds before dividing by
// the size.
type rawTransfer struct {
	mbps              float64
	selfCPU, proxyCPU time.Duration
}

func (r rawTransfer) per(size int64) transfer {
	gb := float64(size) / 1e9
	return transfer{r.mbps, r.selfCPU.Seconds() / gb, r.proxyCPU.Seconds() / gb}
}

// measured runs one transfer and the CPU time both processes spent on it.
func measured(t target, run func() (float64, error)) (rawTransfer, error) {
	s0, p0 := selfCPU(), processCPU(t.pid)
	mbps, err := run()
	return rawTransfer{mbps, selfCPU() - s0, processCPU(t.pid) - p0}, err
}

// median is the median of each field on its own.
func median(ts []transfer) transfer {
	pick := func(f func(transfer) float64) float64 {
		v := make([]float64, len(ts))
		for i, t := range ts {
			v[i] = f(t)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return transfer{
		mbps:     pick(func(t transfer) float64 { return t.mbps }),
		selfCPU:  pick(func(t transfer) float64 { return t.selfCPU }),
		proxyCPU: pick(func(t transfer) float64 { return t.proxyCPU }),
	}
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
	n, err := drain(c, size, buf)
	if err != nil && err != io.EOF {
		return 0, err
	}
	if n != size {
		return 0, fmt.Errorf("got %d bytes, want %d", n, size)
	}
	return mbps(size, time.Since(start)), nil
}

func mbps(n int64, d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }
