//go:build !linux

package netns

import (
	"context"
	"errors"
	"net"
	"runtime"
)

// Listen fails: network namespaces are Linux-only.
func Listen(context.Context, string, string, string) (net.Listener, error) {
	return nil, errors.New("netns: network namespaces are not available on " + runtime.GOOS)
}
