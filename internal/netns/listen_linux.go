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
// moved back. Should moving back fail, the thread is parked for good (its
// goroutine blocks, locked to it): never reused in the wrong namespace,
// and never let exit either, since a thread that exits SIGKILLs every
// child the runtime forked on it with Pdeathsig (a sandbox's init, an
// approval decider).
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
		if err := setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("netns: enter %s: %w", path, err)}
			return
		}
		ln, lerr := (&net.ListenConfig{KeepAlive: -1}).Listen(ctx, network, address)
		if err := setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			if ln != nil {
				ln.Close()
			}
			done <- result{err: fmt.Errorf("netns: return from %s: %w (the thread is parked)", path, err)}
			select {} // parked: neither reused nor exited
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

// setns is unix.Setns; a test replaces it to make the way back fail.
var setns = unix.Setns
