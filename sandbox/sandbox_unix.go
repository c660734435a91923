//go:build linux || darwin

package sandbox

import (
	"context"
	"fmt"
	"net"
)

// Start builds the sandbox for cfg — on Linux the group of caps, the
// init in its namespaces, the filesystem view, lo and the proxy
// listener, and the privilege drop; on macOS the box and its workspace
// copy, the findings directory and the proxy's listener on loopback —
// and runs the start-up probes (on macOS under the command's profile).
// The target is not run until Release. On error nothing is left behind.
func Start(ctx context.Context, cfg Config) (*Sandbox, error) {
	cfg, err := normalize(cfg)
	if err != nil {
		return nil, err
	}
	return startSandbox(ctx, cfg, false)
}

// Listener returns the proxy's listener, nil unless Config.Proxy: on
// Linux inside the sandbox's network namespace; on macOS on loopback,
// where the profile lets the command connect to it alone. The sandbox
// closes it at teardown.
func (s *Sandbox) Listener() net.Listener { return s.lis }

// Wait waits until the target has exited and every process it left is
// dead, then copies the findings out and tears the sandbox down (on
// Linux the cgroup, mounts and namespaces; on macOS the box). It returns
// the same result to every caller.
func (s *Sandbox) Wait() (Result, error) {
	s.once.Do(func() { s.result, s.err = s.finish() })
	return s.result, s.err
}

// Kill ends the run now: on Linux it kills the init (and with it the
// pid namespace) and every process of the group, on macOS the command's
// tree; then it tears down as Wait.
func (s *Sandbox) Kill() error {
	s.killAll()
	_, err := s.Wait()
	return err
}

// outputReceipt says how the output cap holds: per run, or per step of a
// session.
func (s *Sandbox) outputReceipt() string {
	if s.session {
		return fmt.Sprintf("counted by airlock as it forwards each step's stdout and stderr: %d bytes together per step, then cut and the step killed", s.cfg.Caps.OutputBytes)
	}
	return fmt.Sprintf("counted by airlock as it forwards stdout and stderr: %d bytes together, then cut and killed", s.cfg.Caps.OutputBytes)
}
