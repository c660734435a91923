package canary_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/canary"
)

func TestCanary(t *testing.T) {
	c, err := canary.New()
	if err != nil {
		t.Fatal(err)
	}
	req := c.Request()
	fi, err := os.Stat(filepath.Dir(req.CanaryFile))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("canary directory: %v %v, want mode 0700", fi.Mode(), err)
	}
	if !strings.HasPrefix(req.CanaryAddr, "127.0.0.1:") {
		t.Fatalf("canary listener on %q, want the host's loopback", req.CanaryAddr)
	}
	if c.Accepted() != 0 {
		t.Fatal("the canary counted a connection nobody made")
	}
	conn, err := net.Dial("tcp", req.CanaryAddr)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	for deadline := time.Now().Add(5 * time.Second); c.Accepted() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the canary did not count the connection")
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("canary directory left after Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", req.CanaryAddr, time.Second); err == nil {
		t.Error("canary listener still open after Close")
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestStaleCanarySwept leaves a canary behind as an airlock killed with
// SIGKILL would (its lock released, its directory still there) and checks
// that the next canary sweeps it, while a live canary is left alone.
func TestStaleCanarySwept(t *testing.T) {
	parent := t.TempDir()
	live, err := canary.NewIn(parent, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, err := canary.NewIn(parent, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	canary.DropLock(dead) // what the kernel does to a killed process's files
	next, err := canary.NewIn(parent, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if _, err := os.Stat(dead.Dir()); !os.IsNotExist(err) {
		t.Errorf("the dead canary %s was not swept: %v", dead.Dir(), err)
	}
	if _, err := os.Stat(live.Dir()); err != nil {
		t.Errorf("the live canary was swept: %v", err)
	}
}

// TestCanariesMadeConcurrently makes many canaries at once in one parent,
// each sweeping while the others are being made: a canary between its
// creation and its lock must not look dead to a sweep (the race the
// self-test's parallel attempts found: a live canary removed, its owner's
// lock refused).
func TestCanariesMadeConcurrently(t *testing.T) {
	parent := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				c, err := canary.NewIn(parent, 0o700)
				if err != nil {
					errs <- err
					return
				}
				if _, err := os.Stat(c.Dir()); err != nil {
					errs <- fmt.Errorf("a live canary was swept: %w", err)
				}
				c.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkCanary is the host side of the start-up probes: a 0700
// directory with the canary file, a loopback listener, and their removal.
func BenchmarkCanary(b *testing.B) {
	for b.Loop() {
		c, err := canary.New()
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
