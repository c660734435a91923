//go:build !linux && !darwin

package holder

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/holder/step"
)

// errUnsupported is every operation's error off Linux: a holder holds a
// Linux sandbox.
var errUnsupported = errors.New("holder: sessions need Linux (no weaker mode chosen)")

// Client talks to one session's holder; there are none here.
type Client struct{}

// Dir fails closed.
func Dir() (string, error) { return "", errUnsupported }

// Start fails closed.
func Start(context.Context, Config) (Info, error) { return Info{}, errUnsupported }

// Hold fails closed.
func Hold(io.Reader, io.WriteCloser, func(*enforcer.Options) error) error {
	return errUnsupported
}

// Watch fails closed.
func Watch(io.Reader, *os.File) error { return errUnsupported }

// Dial fails closed.
func Dial(dir, id string) (*Client, error) { return nil, errUnsupported }

// List fails closed.
func List(dir string) ([]Info, error) { return nil, errUnsupported }

// Info fails closed.
func (c *Client) Info() (Info, error) { return Info{}, errUnsupported }

// Step fails closed; nothing ran.
func (c *Client) Step(context.Context, step.Request, io.Reader, io.Writer, io.Writer) (int, error) {
	return 0, &step.NotTaken{Reason: errUnsupported.Error()}
}

// Changes fails closed.
func (c *Client) Changes(*os.File) (enforcer.Changes, error) {
	return enforcer.Changes{}, errUnsupported
}

// Stop fails closed.
func (c *Client) Stop(*string, *os.File) (enforcer.SessionSummary, *enforcer.Changes, error) {
	return enforcer.SessionSummary{}, nil, errUnsupported
}

// OpenPooled fails closed.
func OpenPooled(string, enforcer.SessionRequest, string) (Info, error) { return Info{}, errUnsupported }

// StopPool fails closed.
func StopPool(string) (Info, error) { return Info{}, errUnsupported }
