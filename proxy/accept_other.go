//go:build !linux

package proxy

import "net"

// deferAccept is a no-op where TCP_DEFER_ACCEPT is not available.
func deferAccept(net.Listener) {}
