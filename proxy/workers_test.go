package proxy

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkersReuse: a job goes to a waiting worker rather than a new
// goroutine; at most maxIdle wait; retire and the proxy's end release them.
func TestWorkersReuse(t *testing.T) {
	done := make(chan struct{})
	w := newWorkers(done)
	idle := func(n int32) func() bool { return func() bool { return w.idle.Load() == n } }

	var ran atomic.Int32
	w.run(func() { ran.Add(1) })
	waitFor(t, "one idle worker", idle(1))
	release := make(chan struct{})
	// The idle worker takes the next job, and none is left waiting. It
	// counts itself idle just before it waits for a job: sent in between,
	// run would start a goroutine of its own, so the job is sent as run
	// does, until the worker is there to take it.
	job := func() { <-release; ran.Add(1) }
	deadline := time.Now().Add(10 * time.Second)
	for sent := false; !sent; {
		select {
		case w.jobs <- job:
			sent = true
		default:
			if time.Now().After(deadline) {
				t.Fatal("the idle worker never took a job")
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(t, "the idle worker busy", idle(0))
	close(release)
	waitFor(t, "the worker idle again", idle(1))

	// A burst: every job beyond the idle worker starts a goroutine; when
	// they end, maxIdle stay.
	var wg sync.WaitGroup
	block := make(chan struct{})
	for range maxIdle + 10 {
		wg.Add(1)
		w.run(func() { defer wg.Done(); <-block; ran.Add(1) })
	}
	close(block)
	wg.Wait()
	waitFor(t, "maxIdle idle workers", idle(maxIdle))
	time.Sleep(10 * time.Millisecond)
	if n := w.idle.Load(); n != maxIdle {
		t.Errorf("%d idle workers, want %d", n, maxIdle)
	}
	if n := ran.Load(); n != maxIdle+12 {
		t.Errorf("%d jobs ran, want %d", n, maxIdle+12)
	}

	w.retire()
	waitFor(t, "no idle worker after retire", idle(0))
	w.run(func() { ran.Add(1) })
	waitFor(t, "a job after retire", func() bool { return ran.Load() == maxIdle+13 })
	waitFor(t, "one idle worker", idle(1))
	close(done)
	waitFor(t, "no idle worker after the proxy closed", idle(0))
}

// TestDeadlinesOnQuiet: when the timeouts goroutine stops for lack of
// work it calls onQuiet (the proxy then retires its idle workers).
func TestDeadlinesOnQuiet(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	var quiet atomic.Int32
	d := newDeadlines(Limits{HandshakeTimeout: 8 * time.Millisecond, DialTimeout: time.Second, IdleTimeout: time.Second}, done, func() { quiet.Add(1) })
	d.add(time.Millisecond, func() time.Duration { return 0 })
	waitFor(t, "onQuiet called", func() bool { return quiet.Load() == 1 })
}
