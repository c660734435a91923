package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Listen listens on network and address inside the network namespace
// whose file is path (as "ip netns add" makes one, or /proc/PID/ns/net)
// and returns the listener; the calling process stays in its own
// namespace. It needs CAP_SYS_ADMIN over the namespace (root, for one
// that root made).
//
// The socket is made on a locked thread moved into the namespace and
// moved back; should moving back fail, the thread is left locked, so the
// Go runtime ends it instead of reusing it in the wrong namespace.
func Listen(ctx context.Context, path, network, address string) (net.Listener, error) {
	target, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	defer target.Close()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("netns: own namespace: %w", err)}
			return
		}
		defer own.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("netns: enter %s: %w", path, err)}
			return
		}
		ln, lerr := (&net.ListenConfig{KeepAlive: -1}).Listen(ctx, network, address)
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and dies with this goroutine.
			if ln != nil {
				ln.Close()
			}
			done <- result{err: fmt.Errorf("netns: return from %s: %w", path, err)}
			return
		}
		runtime.UnlockOSThread()
		if lerr != nil {
			lerr = fmt.Errorf("netns: in %s: %w", path, lerr)
		}
		done <- result{ln, lerr}
	}()
	r := <-done
	return r.ln, r.err
}
