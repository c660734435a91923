//go:build !linux

package egress

import "errors"

// subscribeAddrChanges has no implementation here: the addresses are read
// on every decision instead.
func subscribeAddrChanges() (<-chan struct{}, error) {
	return nil, errors.New("egress: no address-change subscription on this system")
}
