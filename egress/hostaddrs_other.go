//go:build !linux

package egress

import (
	"errors"
	"net/netip"
)

// subscribeAddrChanges has no implementation here: the addresses are read
// on every decision instead.
func subscribeAddrChanges() (<-chan struct{}, error) {
	return nil, errors.New("egress: no address-change subscription on this system")
}

// localRoutes has nothing to add here: the interfaces' addresses are all.
func localRoutes() ([]netip.Prefix, error) { return nil, nil }
