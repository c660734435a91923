package payload

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// errnoName names the errno behind err ("EPERM"), "" for a nil error and
// "non-errno" when err wraps none (a timeout, a protocol error).
func errnoName(err error) string {
	if err == nil {
		return ""
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
		return fmt.Sprintf("errno %d", int(e))
	}
	return "non-errno"
}

// errnoErr turns a raw syscall's errno into an error, nil for 0.
func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// outcome is the report of a one-call attempt: it succeeded when err is
// nil, and the evidence is ok or the error.
func outcome(name string, err error, ok string) Report {
	r := Report{Attempt: name, Succeeded: err == nil, Errno: errnoName(err), Detail: map[string]string{}}
	if err == nil {
		r.Evidence = ok
	} else {
		r.Evidence = err.Error()
	}
	return r
}

// self returns a command that runs another payload from this binary (the
// sandbox's /.airlock/self, or a test binary that dispatches payloads).
func self(args ...string) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe", append([]string{"payload"}, args...)...)
	cmd.Env = os.Environ()
	return cmd
}

// signalName names the signal that ended a process, "" if it exited.
func signalName(ps *os.ProcessState) string {
	if ps == nil {
		return ""
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	return unix.SignalName(ws.Signal())
}

// statusField returns one field of /proc/self/status ("NoNewPrivs").
func statusField(pid, field string) string {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
