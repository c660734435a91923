//go:build !unix

package approval

import (
	"errors"
	"os"
)

var errNoUnix = errors.New("approval: the approval store needs a Unix system (file ownership and O_NOFOLLOW)")

func privateDirs(string, ...string) (string, error) { return "", errNoUnix }

func checkDir(string) error { return errNoUnix }

func readPrivate(string, int64) ([]byte, error) { return nil, errNoUnix }

func createExcl(string) (*os.File, error) { return nil, errNoUnix }

func syncDir(string) error { return errNoUnix }
