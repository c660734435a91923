//go:build unix

// Package launch is the first process of each command of airlock's macOS
// sandbox: airlock's own binary, started as the program LaunchArg0
// (internal/reexec), which
// reads its Config from descriptor 3, sets the command's rlimits on
// itself, changes to its directory and executes it (on a Mac,
// /usr/bin/sandbox-exec with the command's profile, which then executes
// the command). Go's os/exec cannot set a child's rlimits, and setting
// them on airlock itself would cap airlock: hence a process of its own.
// It runs from this package's initialiser, before main; it imports only
// the lower standard library, x/sys/unix and internal/reexec. The same
// binary, started as ProbeArg0 with its request as its one argument, runs
// the start-up probes under the profile (probe.go).
//
// Its input is airlock's own, written by the parent over a pipe; a
// failure before the execution is written to descriptor 4 (closed on
// execution, so that the parent reads end-of-file once it succeeded).
package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/reexec"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// The programs (internal/reexec): a launcher, and a probe.
const (
	LaunchArg0 = "airlock-seatbelt-launch"
	ProbeArg0  = "airlock-seatbelt-probe"
)

// The launcher's descriptors: its config, and where it reports a failure.
const (
	FDConfig = 3
	FDError  = 4
)

// maxConfig bounds the config read.
const maxConfig = 1 << 20

// Config is what the launcher does.
type Config struct {
	// Argv is executed: Argv[0] is an absolute path.
	Argv []string `json:"argv"`
	// Env is its whole environment.
	Env []string `json:"env"`
	// Dir is its working directory.
	Dir string `json:"dir"`
	// Rlimits are set first, by name (seatbelt.Rlimits' plan).
	Rlimits []seatbelt.Rlimit `json:"rlimits"`
}

// resources maps the names to this system's numbers.
var resources = map[string]int{
	"RLIMIT_CPU": unix.RLIMIT_CPU, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_NOFILE": unix.RLIMIT_NOFILE,
	"RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_CORE": unix.RLIMIT_CORE,
}

func init() {
	switch {
	case reexec.Is(LaunchArg0):
		err := launch()
		os.NewFile(FDError, "error").WriteString(err.Error())
		os.Exit(127)
	case reexec.Is(ProbeArg0) && len(os.Args) == 2:
		os.Exit(probeMain(os.Args[1]))
	}
}

// launch executes the config; it returns only on failure.
func launch() error {
	if _, err := unix.FcntlInt(FDError, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return fmt.Errorf("launch: the error descriptor: %w", err)
	}
	f := os.NewFile(FDConfig, "config")
	b, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	f.Close()
	if err != nil || len(b) > maxConfig {
		return errors.New("launch: the config could not be read whole")
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("launch: config: %w", err)
	}
	if len(c.Argv) == 0 || len(c.Argv[0]) == 0 || c.Argv[0][0] != '/' {
		return errors.New("launch: want an absolute program path")
	}
	for _, r := range c.Rlimits {
		res, ok := resources[r.Name]
		if !ok {
			return fmt.Errorf("launch: unknown rlimit %q", r.Name)
		}
		// Through the syscall package: it also stops Go from restoring
		// the original RLIMIT_NOFILE in the program it executes.
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: r.Cur, Max: r.Max}); err != nil {
			return fmt.Errorf("launch: setrlimit %s %d/%d: %w", r.Name, r.Cur, r.Max, err)
		}
	}
	if err := closeOnExec(); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	if err := os.Chdir(c.Dir); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	err = syscall.Exec(c.Argv[0], c.Argv, c.Env)
	return fmt.Errorf("launch: exec %s: %w", c.Argv[0], err)
}

// closeOnExec marks every descriptor above stderr close-on-exec: airlock
// may have inherited some from its own parent without the flag, and the
// command gets none of them.
func closeOnExec() error {
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		return fmt.Errorf("list the descriptors: %w", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The directory's own descriptor is closed already: EBADF.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("descriptor %d: %w", fd, err)
		}
	}
	return nil
}
