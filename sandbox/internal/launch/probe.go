//go:build unix

package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The kinds of check a probe makes.
const (
	// Unreadable: opening Target for reading must fail.
	Unreadable = "unreadable"
	// Unwritable: creating a file in the directory Target must fail.
	Unwritable = "unwritable"
	// Writable: creating (and removing) a file in Target must work.
	Writable = "writable"
	// Unreachable: a TCP connection to Target (host:port) must fail.
	Unreachable = "unreachable"
	// StdioOnly: no descriptor but 0, 1 and 2 may be open.
	StdioOnly = "stdio_only"
)

// Check is one start-up probe: a fixed name, a kind and what it tries.
type Check struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Target string `json:"target,omitempty"`
}

// Result is a check's outcome; the zero value is a failure.
type Result struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// probeMain runs the checks of req (JSON) in this process, which must
// be under the command's profile, and prints their results as JSON.
func probeMain(req string) int {
	var checks []Check
	if err := json.Unmarshal([]byte(req), &checks); err != nil {
		fmt.Fprintln(os.Stderr, "probe: request:", err)
		return 2
	}
	res := Probe(checks)
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

// Probe runs checks in the calling process. The descriptor check comes
// first, before anything of this process opens one.
func Probe(checks []Check) []Result {
	out := make([]Result, len(checks))
	order := make([]int, 0, len(checks))
	for i, c := range checks {
		if c.Kind == StdioOnly {
			order = append([]int{i}, order...)
		} else {
			order = append(order, i)
		}
	}
	for _, i := range order {
		out[i] = check(checks[i])
	}
	return out
}

func check(c Check) Result {
	r := Result{Name: c.Name}
	switch c.Kind {
	case Unreadable:
		f, err := os.Open(c.Target)
		if err == nil {
			f.Close()
			r.Detail = c.Target + " could be opened"
			return r
		}
		r.OK, r.Detail = true, c.Target+": "+errText(err)
	case Unwritable, Writable:
		name := filepath.Join(c.Target, ".airlock-probe-"+strconv.Itoa(os.Getpid()))
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			os.Remove(name)
		}
		switch {
		case c.Kind == Unwritable && err == nil:
			r.Detail = "a file could be created in " + c.Target
		case c.Kind == Unwritable:
			r.OK, r.Detail = true, "creating a file in "+c.Target+": "+errText(err)
		case err != nil:
			r.Detail = "creating a file in " + c.Target + ": " + errText(err)
		default:
			r.OK, r.Detail = true, "a file could be created in "+c.Target
		}
	case Unreachable:
		conn, err := net.DialTimeout("tcp", c.Target, 2*time.Second)
		if err == nil {
			conn.Close()
			r.Detail = "connected to " + c.Target
			return r
		}
		r.OK, r.Detail = true, "connecting to "+c.Target+": "+errText(err)
	case StdioOnly:
		// What this process opened itself is close-on-exec (Go's
		// runtime opens its own); what it inherited is not.
		var open []int
		for fd := 3; fd < 1024; fd++ {
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
				open = append(open, fd)
			}
		}
		if len(open) > 0 {
			r.Detail = fmt.Sprintf("descriptors %v were inherited beyond stdio", open)
			return r
		}
		r.OK, r.Detail = true, "only stdin, stdout and stderr were inherited"
	default:
		r.Detail = "unknown check " + strconv.Quote(c.Kind)
	}
	return r
}

// errText is an error's cause, without the path it repeats.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return err.Error()
}
