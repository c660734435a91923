//go:build !linux && !darwin

package selftest

import (
	"context"
	"errors"
)

// Run fails on systems other than Linux and macOS: there is no sandbox
// to attack, and no weaker battery is offered.
func Run(context.Context, Options) (*Report, error) {
	return nil, errors.New("selftest: not supported on this system (Linux and macOS only)")
}

// reapToken finds nothing off Linux: no sandbox ever ran.
func reapToken(string) []string { return nil }

// planVsock is never played off Linux (Run fails first).
func planVsock(*fixtures) (*plan, error) { return nil, errors.New("selftest: Linux only") }

func swap(string, string) error { return errors.New("selftest: Linux only") }
