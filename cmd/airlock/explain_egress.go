package main

import (
	"context"
	"errors"
	"io"

	"github.com/airlock-sandbox/airlock/policy"
)

// explainEgress prints the egress gate's decision (TEMPORARY until the
// egress gate lands).
func explainEgress(ctx context.Context, w io.Writer, pol *policy.Loaded, task, host string, resolve, asJSON bool) error {
	return errors.New("explain --task: the egress gate is not wired yet")
}
