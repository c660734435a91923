//go:build unix

package payload

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"time"
)

// The bombs that Linux's and the Mac's payloads share.

// forkUntil calls start, which starts one process, as fast as the system
// allows, until limit processes are started or 20 seconds pass, and
// reports how many started and how many were refused (errno names the
// last refusal's errno).
func forkUntil(name string, limit int, errno func(error) string, start func() error) int {
	deadline := time.Now().Add(20 * time.Second)
	n, refusals := 0, 0
	var last error
	for n < limit && time.Now().Before(deadline) {
		if err := start(); err != nil {
			last = err
			refusals++
			time.Sleep(5 * time.Millisecond)
			continue
		}
		n++
	}
	r := Report{Attempt: name, Succeeded: n >= limit, Errno: errno(last),
		Detail: map[string]string{"processes": strconv.Itoa(n), "refusals": strconv.Itoa(refusals)}}
	r.Evidence = fmt.Sprintf("started %d processes; %d refused (last: %v)", n, refusals, last)
	return report(r)
}

// touchMemory turns the collector off and touches limit MiB of memory,
// 16 MiB at a time, which the caller keeps alive.
func touchMemory(limit int64) [][]byte {
	debug.SetGCPercent(-1)
	var keep [][]byte
	for got := int64(0); got < limit; got += 16 {
		b := make([]byte, 16<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	return keep
}
