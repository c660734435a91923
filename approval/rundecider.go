//go:build linux || darwin

package approval

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// deciderEnv is the decider's whole environment: nothing of airlock's
// own (no tokens, no proxy settings) reaches it.
func deciderEnv() []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	if home, ok := os.LookupEnv("HOME"); ok {
		env = append(env, "HOME="+home)
	}
	return env
}

// runDecider runs argv in a process group of its own with input on stdin
// and returns its stdout, or why its run gave no answer (problem), or
// ctx's error. The group is killed once the program has exited, timed out
// or written too much, while the program's id is still held (it is not
// reaped until then), so no other process can be hit by the kill.
func runDecider(ctx context.Context, argv []string, input []byte, timeout time.Duration) ([]byte, string, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	defer outR.Close()
	stderr := &prefixBuffer{max: 512}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = deciderEnv(), "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(input), outW, stderr
	cmd.SysProcAttr = deciderAttr()
	cmd.WaitDelay = time.Second // the stdin and stderr copiers, should a process outside the group hold them
	err = cmd.Start()
	outW.Close()
	if err != nil {
		return nil, "could not be started: " + err.Error(), nil
	}
	pid := cmd.Process.Pid

	type read struct {
		out  []byte
		over bool
		err  error
	}
	reads := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(outR, maxDeciderOutput+1))
		reads <- read{b, len(b) > maxDeciderOutput, err}
	}()
	exited := exitOf(pid)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var (
		res      read
		haveRead bool
		problem  string
		ctxErr   error
	)
	for done := false; !done; {
		select {
		case <-exited:
			done = true
		case res = <-reads:
			haveRead, reads = true, nil
			if res.over {
				problem, done = fmt.Sprintf("wrote more than %d bytes on stdout and was killed", maxDeciderOutput), true
			}
		case <-timer.C:
			problem, done = fmt.Sprintf("did not answer within %v and was killed", timeout), true
		case <-ctx.Done():
			ctxErr, done = ctx.Err(), true
		}
	}
	unix.Kill(-pid, unix.SIGKILL) // the group, stragglers included; the leader is not reaped yet
	<-exited
	waitErr := cmd.Wait()
	if !haveRead {
		select {
		case res = <-reads:
		case <-time.After(time.Second): // a process that left the group holds stdout
			outR.Close()
			res = <-reads
			if problem == "" {
				problem = "left a process outside its group holding its stdout"
			}
		}
	}
	switch {
	case ctxErr != nil:
		return nil, "", ctxErr
	case problem != "":
		return nil, problem, nil
	case res.err != nil:
		return nil, "stdout could not be read: " + res.err.Error(), nil
	}
	if st := cmd.ProcessState; st != nil {
		ws, _ := st.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			return nil, fmt.Sprintf("was killed by signal %d (%v)%s", ws.Signal(), ws.Signal(), stderr.excerpt()), nil
		case ws.ExitStatus() != 0:
			return nil, fmt.Sprintf("exited with status %d%s", ws.ExitStatus(), stderr.excerpt()), nil
		}
		return res.out, "", nil
	}
	return nil, fmt.Sprintf("could not be waited for: %v", waitErr), nil
}

// prefixBuffer keeps the first max bytes written to it and counts the rest.
type prefixBuffer struct {
	buf  []byte
	max  int
	more bool
}

func (p *prefixBuffer) Write(b []byte) (int, error) {
	n := min(len(b), p.max-len(p.buf))
	p.buf = append(p.buf, b[:n]...)
	p.more = p.more || n < len(b)
	return len(b), nil
}

// excerpt is the start of the decider's stderr, escaped, for a reason.
func (p *prefixBuffer) excerpt() string {
	s := string(bytes.TrimSpace(p.buf))
	if s == "" {
		return ""
	}
	if p.more {
		s += "…"
	}
	return "; its stderr: " + termtext.Clip(s, 300)
}
