package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// dial connects to the first of addrs that answers on port. It dials the
// checked address itself, never a name, so nothing is looked up again.
func (p *Proxy) dial(ctx context.Context, addrs []netip.Addr, port uint16) (net.Conn, netip.AddrPort, error) {
	ctx, cancel := context.WithTimeout(ctx, p.limits.DialTimeout)
	defer cancel()
	var errs []error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, port)
		start := time.Now()
		c, err := p.dialer.DialContext(ctx, "tcp", ap.String())
		p.metrics.observeDial(p.task, p.identity, time.Since(start))
		if err == nil {
			return c, ap, nil
		}
		if ctx.Err() == context.DeadlineExceeded {
			// Cancelled by the proxy's timeout: say so as a dial timeout
			// does ("i/o timeout"), not as a cancellation.
			if c != nil {
				c.Close()
			}
			err = &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: os.ErrDeadlineExceeded}
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return nil, netip.AddrPort{}, errs[0]
	}
	return nil, netip.AddrPort{}, fmt.Errorf("%d addresses tried: %w", len(errs), errors.Join(errs...))
}

// failure classifies an upstream failure after an allow, for the HTTP
// status and the SOCKS5 reply that report it.
type failure uint8

const (
	failUnreachable failure = iota // host unreachable, or anything unclassified
	failRefused                    // the destination refused the connection
	failNetwork                    // network unreachable
	failTimeout                    // the dial or lookup timed out
	failCapacity                   // the proxy is at its tunnel limit, or cannot record
)

// recordError is a decision that could not be recorded.
type recordError struct{ err error }

func (e *recordError) Error() string { return "recording the decision: " + e.err.Error() }
func (e *recordError) Unwrap() error { return e.err }

// classify maps an upstream error to a failure class.
func classify(err error) failure {
	var ne net.Error
	var re *recordError
	var le *limitError
	switch {
	case errors.As(err, &le), errors.As(err, &re):
		return failCapacity
	case errors.Is(err, syscall.ECONNREFUSED):
		return failRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return failNetwork
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return failTimeout
	}
	return failUnreachable
}
