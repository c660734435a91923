package payload

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The resource payloads try to take more than the caps allow. Each
// reports that it started (so a kill is told apart from a payload that
// never ran) and, if nothing stopped it within its bound, that it got
// through. The bounds keep a host whose caps are broken from being hurt.
func init() {
	Register("spin", spin)
	Register("spin-threads", spinThreads)
	Register("membomb", membomb)
	Register("forkbomb", forkbomb)
	Register("threads", threads)
	Register("sleep", sleep)
	Register("big-file", bigFile)
	Register("fill", fill)
	Register("fill-all", fillAll)
	Register("touch", touch)
	Register("flood", flood)
	Register("fds", fds)
}

// argSeconds parses an optional duration in seconds at args[i].
func argSeconds(args []string, i int, def time.Duration) time.Duration {
	if len(args) > i {
		if n, err := strconv.ParseFloat(args[i], 64); err == nil && n > 0 {
			return time.Duration(n * float64(time.Second))
		}
	}
	return def
}

// argInt parses an optional positive integer at args[i].
func argInt(args []string, i int, def int64) int64 {
	if len(args) > i {
		if n, err := strconv.ParseInt(args[i], 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return def
}

func started(name, what string) {
	Emit(os.Stdout, Report{Attempt: name, Evidence: "started: " + what})
}

// spin [SECONDS [xcpu]]: an infinite loop (ASI09), or one of SECONDS of
// CPU. The Go runtime ignores SIGXCPU, so RLIMIT_CPU ends it with its
// hard limit's SIGKILL; with "xcpu" it takes SIGXCPU's default action, as
// a C program does, and dies of it.
func spin(args []string) int {
	limit := argSeconds(args, 0, 0)
	if len(args) > 1 && args[1] == "xcpu" {
		signal.Reset(unix.SIGXCPU)
	}
	started("spin", "burning CPU until a cap stops it")
	deadline := time.Now().Add(limit)
	for x := 0; ; x++ {
		if limit > 0 && x&0xfffff == 0 && time.Now().After(deadline) {
			return report(Report{Attempt: "spin", Succeeded: true,
				Evidence: fmt.Sprintf("burned CPU for %s without being stopped", limit)})
		}
	}
}

// spin-threads [N] [SECONDS]: N threads burning CPU at once, so only a
// cap on the whole group's CPU time stops them soon.
func spinThreads(args []string) int {
	n := int(argInt(args, 0, 4))
	limit := argSeconds(args, 1, 30*time.Second)
	runtime.GOMAXPROCS(n)
	started("spin-threads", fmt.Sprintf("%d threads burning CPU", n))
	for i := 0; i < n; i++ {
		go func() {
			// A full-period LCG: it comes back to 0 only after 2^64
			// steps, which no cap lets it take.
			for x := uint64(1); x != 0; x = x*6364136223846793005 + 1 {
			}
		}()
	}
	time.Sleep(limit)
	return report(Report{Attempt: "spin-threads", Succeeded: true,
		Evidence: fmt.Sprintf("%d threads burned CPU for %s without being stopped", n, limit)})
}

// membomb [MiB]: touch memory 16 MiB at a time, up to MiB (default 4096).
func membomb(args []string) int {
	limit := argInt(args, 0, 4096)
	started("membomb", fmt.Sprintf("touching up to %d MiB", limit))
	runtime.KeepAlive(touchMemory(limit))
	return report(Report{Attempt: "membomb", Succeeded: true,
		Evidence: fmt.Sprintf("touched %d MiB without being stopped", limit)})
}

// forkbomb [N]: start copies of this binary that wait forever, as fast as
// the kernel allows, up to N (default 2000) processes.
func forkbomb(args []string) int {
	limit := int(argInt(args, 0, 2000))
	// The bomb's own runtime must not need a new OS thread once the tasks
	// cap is full: a Go runtime that cannot make one dies (exit 2) before
	// it reports, as it did at random under podman's pids limit. So one
	// processor, and idle threads made ahead for the runtime to reuse.
	runtime.GOMAXPROCS(1)
	spareThreads(4)
	started("forkbomb", fmt.Sprintf("starting up to %d processes", limit))
	return forkUntil("forkbomb", limit, errnoName, func() error { return self("hold", "forkbomb").Start() })
}

// spareThreads makes n OS threads and leaves them idle, for the runtime
// to reuse instead of making one: each is held by a goroutine locked to
// it until all are made, then unlocked, which leaves the thread idle
// rather than ending it.
func spareThreads(n int) {
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			ready.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	ready.Wait()
	close(release)
	done.Wait()
}

// threads [N]: create OS threads that each block, up to N (default 5000).
func threads(args []string) int {
	limit := int(argInt(args, 0, 5000))
	debug.SetMaxThreads(limit + 100)
	started("threads", fmt.Sprintf("creating up to %d threads", limit))
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return report(outcome("threads", err, ""))
	}
	for i := 0; i < limit; i++ {
		go func() {
			runtime.LockOSThread()
			var b [1]byte
			_, _ = unix.Read(p[0], b[:]) // blocks this thread for good
		}()
		if i%64 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	time.Sleep(time.Second)
	return report(Report{Attempt: "threads", Succeeded: true,
		Evidence: fmt.Sprintf("%d threads created without being stopped", limit)})
}

// sleep [SECONDS]: wait without using CPU (default one hour), so that
// only the wall clock stops it.
func sleep(args []string) int {
	limit := argSeconds(args, 0, time.Hour)
	started("sleep", "waiting without using CPU")
	time.Sleep(limit)
	return report(Report{Attempt: "sleep", Succeeded: true,
		Evidence: fmt.Sprintf("slept %s without being stopped", limit)})
}

// big-file PATH [MiB]: write one file of MiB (default 1024) MiB.
func bigFile(args []string) int {
	if len(args) < 1 {
		return usage("big-file", "PATH [MiB]")
	}
	limit := argInt(args, 1, 1024)
	f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return report(outcome("big-file", err, ""))
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for ; n < limit; n++ {
		if _, err := f.Write(buf); err != nil {
			return steps("big-file", "mib", n, err, fmt.Sprintf("wrote %d MiB", n))
		}
	}
	return report(Report{Attempt: "big-file", Succeeded: true, Detail: map[string]string{"mib": strconv.FormatInt(n, 10)},
		Evidence: fmt.Sprintf("wrote a %d MiB file", n)})
}

// fill DIR [MiB]: write 1 MiB files in DIR until refused, up to MiB
// (default 1024).
func fill(args []string) int {
	if len(args) < 1 {
		return usage("fill", "DIR [MiB]")
	}
	limit := argInt(args, 1, 1024)
	buf := make([]byte, 1<<20)
	var n int64
	var err error
	for ; n < limit; n++ {
		if err = os.WriteFile(filepath.Join(args[0], fmt.Sprintf("fill-%d", n)), buf, 0o644); err != nil {
			break
		}
	}
	return steps("fill", "mib", n, err, fmt.Sprintf("wrote %d MiB in %s", n, args[0]))
}

// fill-all [MiB]: fill /tmp, /workspace, /findings and /dev/shm in turn
// with 1 MiB files, each until refused, up to MiB (default 1024) in all:
// the disk cap holds for the four together or not at all.
func fillAll(args []string) int {
	limit := argInt(args, 0, 1024)
	buf := make([]byte, 1<<20)
	var n int64
	var last error
	var per []string
	for _, dir := range []string{"/tmp", "/workspace", "/findings", "/dev/shm"} {
		got := int64(0)
		for ; n < limit; n++ {
			if last = os.WriteFile(filepath.Join(dir, fmt.Sprintf("fill-all-%d", n)), buf, 0o644); last != nil {
				break
			}
			got++
		}
		per = append(per, fmt.Sprintf("%s %d MiB", dir, got))
	}
	r := Report{Attempt: "fill-all", Succeeded: n >= limit, Errno: errnoName(last),
		Detail: map[string]string{"mib": strconv.FormatInt(n, 10)}}
	r.Evidence = fmt.Sprintf("wrote %d MiB in all (%s), last: %v", n, strings.Join(per, ", "), last)
	return report(r)
}

// touch DIR [N]: make empty files in DIR until refused, up to N (default
// 1,000,000): they take inodes, which the disk cap's bytes do not count.
func touch(args []string) int {
	if len(args) < 1 {
		return usage("touch", "DIR [N]")
	}
	limit := argInt(args, 1, 1000000)
	var n int64
	var err error
	for ; n < limit; n++ {
		var fd int
		if fd, err = unix.Open(filepath.Join(args[0], fmt.Sprintf("e%d", n)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644); err != nil {
			break
		}
		unix.Close(fd)
	}
	return steps("touch", "files", n, err, fmt.Sprintf("made %d empty files in %s", n, args[0]))
}

// flood [MiB]: write to stdout and stderr in turn as fast as the pipes
// take it, up to MiB (default 65536), for airlock to forward.
func flood(args []string) int {
	limit := argInt(args, 0, 65536)
	started("flood", fmt.Sprintf("writing up to %d MiB to stdout and stderr", limit))
	block := bytes.Repeat([]byte("flood "), 64<<10/6)
	var n int64
	for ; n < limit<<20; n += int64(len(block)) {
		if _, err := unix.Write(1+int(n/int64(len(block)))%2, block); err != nil {
			return report(Report{Attempt: "flood", Errno: errnoName(err), Evidence: fmt.Sprintf("wrote %d MiB, then: %v", n>>20, err)})
		}
	}
	return report(Report{Attempt: "flood", Succeeded: true, Evidence: fmt.Sprintf("wrote %d MiB without being stopped", n>>20)})
}

// fds [N]: open /dev/null until refused, up to N (default 1<<20).
func fds(args []string) int {
	limit := argInt(args, 0, 1<<20)
	var n int64
	var err error
	for ; n < limit; n++ {
		if _, err = unix.Open("/dev/null", unix.O_RDONLY, 0); err != nil {
			break
		}
	}
	return steps("fds", "opened", n, err, fmt.Sprintf("opened %d descriptors", n))
}

// steps reports a loop that made n steps, then was refused the next with
// err, or made all it was allowed to (err nil): key counts the steps in
// Detail, and did says what they did.
func steps(name, key string, n int64, err error, did string) int {
	r := outcome(name, err, did)
	r.Detail[key] = strconv.FormatInt(n, 10)
	if err != nil {
		r.Evidence = fmt.Sprintf("%s, then: %v", did, err)
	}
	return report(r)
}
