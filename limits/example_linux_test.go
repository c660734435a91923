package limits_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/limits"
)

// The calls a sandbox makes for one run, in order.
func Example() {
	caps := limits.Caps{
		Wall: 10 * time.Second, CPU: 10 * time.Second,
		MemoryBytes: 512 << 20, Tasks: 20, DiskWriteBytes: 100 << 20, OpenFiles: 256,
		OutputBytes: 16 << 20,
	}
	g, err := limits.New(caps, limits.Options{Name: "run-42", Require: []string{"cgroup-memory"}})
	if errors.Is(err, limits.ErrUnavailable) {
		fmt.Println("refuse to run (exit 125):", err)
		return
	} else if err != nil {
		fmt.Println("setup error (exit 125):", err)
		return
	}
	defer g.Delete() // kills what is left, removes every directory

	cmd := exec.Command("/path/to/init") // waits on a pipe until placed
	if fd, ok := g.Dir(); ok {
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	}
	if err := cmd.Start(); err != nil {
		return
	}
	if err := g.Place(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill() // not contained: never let it run
		return
	}
	// ... hand g.Rlimits() to the init (it sets them on itself just
	// before execve), then open its gate.

	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { defer close(watched); g.Watch(ctx, nil) }()
	_ = cmd.Wait()
	cancel()
	<-watched

	killedBy := g.KilledBy()
	st, _ := g.Stats()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && killedBy == "" && ws.Signaled() {
		killedBy = limits.SignalCause(ws.Signal(), st.CPU, caps.CPU)
	}
	fmt.Println(killedBy, st.CPU, st.PeakMemoryBytes, g.Receipt())
}
