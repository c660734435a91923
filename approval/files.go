package approval

import (
	"errors"
	"fmt"
	"os"

	"github.com/airlock-sandbox/airlock/internal/privstate"
)

// The store's files are airlock's private state (internal/privstate): the
// checks of its directories and files are that package's, shared with the
// audit log's signing key.

func privateDirs(base string, names ...string) (string, error) {
	p, err := privstate.Dirs(base, names...)
	if err != nil {
		return "", fmt.Errorf("approval: %w", err)
	}
	return p, nil
}

func checkDir(dir string) error {
	err := privstate.CheckDir(dir)
	var pe *os.PathError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("approval: store %s: %w", dir, pe.Err)
	case err != nil:
		return fmt.Errorf("approval: store: %w", err)
	}
	return nil
}

var readPrivate = privstate.ReadPrivate
