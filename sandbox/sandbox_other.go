//go:build !linux && !darwin

package sandbox

import (
	"context"
	"net"
)

// Sandbox is one started run; on this system there are none.
type Sandbox struct{}

// Init returns at once: no process is a sandbox's init on this system.
func Init() {}

// Start fails closed: airlock has no sandbox on this system.
func Start(ctx context.Context, cfg Config) (*Sandbox, error) { return nil, ErrUnsupported }

// Listener returns nil.
func (s *Sandbox) Listener() net.Listener { return nil }

// Release fails closed.
func (s *Sandbox) Release() error { return ErrUnsupported }

// Wait fails closed.
func (s *Sandbox) Wait() (Result, error) { return Result{ExitCode: -1}, ErrUnsupported }

// Kill fails closed.
func (s *Sandbox) Kill() error { return ErrUnsupported }

// Probe reports every probe as failed: there is no sandbox here.
func Probe(req ProbeRequest) []ProbeResult {
	return []ProbeResult{{Name: "platform", Detail: "no sandbox on this system"}}
}

func hostProvides(name string) (bool, string) { return false, "no sandbox on this system" }

// InitProgram says that no init runs on this system.
func InitProgram(context.Context) string { return "none: airlock has no sandbox on this system" }

// PrivateListener reports whether the proxy's listener is the sandbox's
// alone; there is none on this system.
const PrivateListener = true
