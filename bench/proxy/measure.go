package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"
)

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
