//go:build !linux && !darwin

package audit

import (
	"errors"
	"os"
)

// errUnsupported fails every write closed on a platform where airlock has
// no tested file locking: a log that two writers could interleave on is
// not an audit log. Reading and verifying work everywhere.
var errUnsupported = errors.New("audit: writing an audit log is supported on Linux and macOS only")

const noFollow = 0

func lockFile(*os.File) error   { return errUnsupported }
func unlockFile(*os.File) error { return errUnsupported }
func tryLock(*os.File) error    { return errUnsupported }

var syncData = func(*os.File) error { return errUnsupported }
