package egress

import (
	"errors"
	"fmt"
)

// ErrMalformed is matched (errors.Is) by every error for a host that is
// not a valid name or IP literal.
var ErrMalformed = errors.New("malformed host")

// ErrZone is matched (errors.Is) by the error for an IPv6 literal with a
// zone identifier; such an error matches ErrMalformed too.
var ErrZone = errors.New("zone identifiers are refused")

// HostError says why a host was refused by ParseTarget or SplitHostPort.
type HostError struct {
	// Host is the host as given (possibly cut short for display).
	Host string
	// Cause is a lower-case phrase saying what is wrong, e.g. "empty
	// label in name"; the gate puts it in its reasons.
	Cause string
	zone  bool
}

// Error returns "egress: malformed host "HOST": CAUSE".
func (e *HostError) Error() string {
	return fmt.Sprintf("egress: malformed host %q: %s", e.Host, e.Cause)
}

// Is matches ErrMalformed, and ErrZone for a zone identifier.
func (e *HostError) Is(target error) bool {
	return target == ErrMalformed || (e.zone && target == ErrZone)
}

// maxShown bounds how much of a refused host, or of a request's path or
// header name, is echoed in errors and reasons.
const maxShown = 256

// clipped is s cut to maxShown bytes, "..." marking the cut.
func clipped(s string) string {
	if len(s) > maxShown {
		return s[:maxShown] + "..."
	}
	return s
}

func malformed(format string, args ...any) error {
	return &HostError{Cause: fmt.Sprintf(format, args...)}
}

func errZone() error {
	return &HostError{Cause: ErrZone.Error(), zone: true}
}

// causeOf returns the cause of a HostError, or the error's text.
func causeOf(err error) string {
	var he *HostError
	if errors.As(err, &he) {
		return he.Cause
	}
	return err.Error()
}

// withHost records host in a HostError returned by the parsers.
func withHost(err error, host string) error {
	var he *HostError
	if errors.As(err, &he) && he.Host == "" {
		he.Host = clipped(host)
	}
	return err
}
