//go:build !unix

package privstate

import (
	"errors"
	"os"
)

var errNoUnix = errors.New("airlock's private state needs a Unix system (file ownership and O_NOFOLLOW)")

// Dirs fails closed off Unix.
func Dirs(string, ...string) (string, error) { return "", errNoUnix }

// CheckDir fails closed off Unix.
func CheckDir(string) error { return errNoUnix }

// ReadPrivate fails closed off Unix.
func ReadPrivate(string, int64) ([]byte, error) { return nil, errNoUnix }

// CreateExcl fails closed off Unix.
func CreateExcl(string) (*os.File, error) { return nil, errNoUnix }

// SyncDir fails closed off Unix.
func SyncDir(string) error { return errNoUnix }
