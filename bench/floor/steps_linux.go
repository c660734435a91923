package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The -steps mode is the floor under a step in a live session (issue 15:
// at most 0.3x bwrap through the library): the sandbox is built once, as
// a run's, and then each step is what an airlock session step must do by
// its contracts (docs/sessions.md, "Each step"), and nothing more:
//
//  1. with -state, the step's decision appended and fdatasync'd before
//     the step is asked for, and its outcome appended after it, not
//     synced (the next decision syncs it), as airlock's lazy outcome;
//  2. one message to the init on a socketpair and one back (airlock's
//     exec and exited);
//  3. with -cgroup, the step in a group of its own inside the sandbox's,
//     in the memory and pids hierarchies, with limits: the init's main
//     thread writes itself into the group's tasks files, forks the
//     command there and moves back (airlock's spawnStep); the step's
//     peak memory and the sandbox's CPU read after it, the peak reset;
//  4. the command forked and exec'd from the init (seccomp, Landlock and
//     no_new_privs inherited), waited for, its status sent back.
//
// Left out: the command gate, the proxy, the step's pipes and the copies
// of its output, and a new group per step (airlock makes one while the
// step before runs). It prints one row, in bench/session's form: the
// name, the count, and the median, quartiles and 99th percentile in ms.

// stepsRow names the -steps row.
const stepsRow = "floor-sandbox-step"

// stepGroup is the -steps mode's group for the steps, a child of the
// sandbox's in the memory and pids hierarchies.
type stepGroup struct {
	dirs        []string   // the child's directories, memory first
	enter, back []*os.File // their tasks files, and the sandbox group's
	// v2 and v2Dir, with -gate, are a cgroup v2 group the steps are
	// cloned into (CLONE_INTO_CGROUP) frozen, and its directory.
	v2    string
	v2Dir *os.File
}

// makeStepGroup makes the child group in cg's memory and pids
// directories, limits it, and opens the tasks files the init moves
// through.
func makeStepGroup(cg *cgroups) (*stepGroup, error) {
	sg := &stepGroup{}
	for i, h := range hierarchies[:2] { // memory, pids: cg.dirs is in hierarchies' order
		parent := cg.dirs[i]
		dir := parent + "/step"
		if err := os.Mkdir(dir, 0o755); err != nil {
			return sg, fmt.Errorf("cgroup: %w", err)
		}
		sg.dirs = append(sg.dirs, dir)
		if err := os.WriteFile(dir+"/"+h.file, []byte(h.value), 0); err != nil {
			return sg, fmt.Errorf("cgroup: limit the step's group: %w", err)
		}
		for _, p := range []struct {
			dir   string
			files *[]*os.File
		}{{dir, &sg.enter}, {parent, &sg.back}} {
			f, err := os.OpenFile(p.dir+"/tasks", os.O_WRONLY, 0)
			if err != nil {
				return sg, fmt.Errorf("cgroup: %w", err)
			}
			*p.files = append(*p.files, f)
		}
	}
	return sg, nil
}

// makeGate makes sg's frozen cgroup v2 group, under this process's own.
func (sg *stepGroup) makeGate() error {
	own, err := ownGroups() // cgroup v2's line names no controller: ""
	if err != nil {
		return err
	}
	sg.v2 = fmt.Sprintf("/sys/fs/cgroup/unified%s/floor-%d-gate", own[""], os.Getpid())
	if err := os.Mkdir(sg.v2, 0o755); err != nil {
		sg.v2 = ""
		return fmt.Errorf("cgroup v2: %w", err)
	}
	if sg.v2Dir, err = os.Open(sg.v2); err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	return sg.freeze("1")
}

// freeze writes v ("1" or "0") to the gate group's cgroup.freeze.
func (sg *stepGroup) freeze(v string) error {
	if err := os.WriteFile(sg.v2+"/cgroup.freeze", []byte(v), 0); err != nil {
		return fmt.Errorf("cgroup v2: freeze %s: %w", v, err)
	}
	return nil
}

// remove closes the files and removes the child's directories.
func (sg *stepGroup) remove() error {
	for _, f := range append(sg.enter, sg.back...) {
		f.Close()
	}
	var errs []error
	if sg.v2 != "" {
		sg.v2Dir.Close()
		if err := os.Remove(sg.v2); err != nil {
			errs = append(errs, fmt.Errorf("cgroup v2: %w", err))
		}
	}
	for _, dir := range sg.dirs {
		if err := os.Remove(dir); err != nil {
			errs = append(errs, fmt.Errorf("cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// steps builds the sandbox once and times n steps of argv in it.
func steps(o options, argv []string, n int) (err error) {
	var log *auditLog
	if o.state != "" {
		log = &auditLog{dir: o.state}
		if log.f, err = os.OpenFile(o.state+"/audit.jsonl", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		defer log.f.Close()
	}
	var cg *cgroups
	var sg *stepGroup
	if o.cgroup {
		cg = startCgroups()
		defer func() { err = errors.Join(err, cg.remove()) }()
		<-cg.done
		if cg.err != nil {
			return cg.err
		}
		sg, err = makeStepGroup(cg)
		defer func() { err = errors.Join(sg.remove(), err) }() // before the sandbox's group
		if err != nil {
			return err
		}
		if o.gate {
			if err := sg.makeGate(); err != nil {
				return err
			}
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socketpair: %w", err)
	}
	ctrl, child := os.NewFile(uintptr(fds[0]), "ctrl"), os.NewFile(uintptr(fds[1]), "init-ctrl")
	defer ctrl.Close()
	args := []string{initName, "-steps"}
	if sg != nil {
		args = append(args, "-tasks")
	}
	if o.gate {
		args = append(args, "-gate")
	}
	if o.seccomp {
		args = append(args, "-seccomp")
	}
	if o.landlock {
		args = append(args, "-landlock")
	}
	args = append(append(args, "--"), argv...)
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr, child}
	if sg != nil {
		files = append(append(files, sg.enter...), sg.back...)
	}
	if o.gate {
		files = append(files, sg.v2Dir)
	}
	p, err := os.StartProcess("/proc/self/exe", args, &os.ProcAttr{Files: files, Sys: sandboxAttr()})
	child.Close()
	if err != nil {
		return fmt.Errorf("start the init: %w", err)
	}
	defer func() {
		ctrl.Close() // the init's end of file: it exits
		if _, werr := p.Wait(); werr != nil {
			err = errors.Join(err, fmt.Errorf("wait for the init: %w", werr))
		}
	}()
	if err := release(p.Pid, cg, nil, ctrl); err != nil {
		_ = p.Kill()
		return err
	}
	if o.serve != "" {
		return serve(o.serve, func() error { return step(ctrl, log, cg, sg, argv, o.gate) })
	}
	// SESSION_BENCH_GAP, a Go duration, pauses before each step, untimed,
	// as bench/session's SPACED=1 does.
	gap, _ := time.ParseDuration(os.Getenv("SESSION_BENCH_GAP"))
	times := make([]time.Duration, 0, n)
	for range n {
		time.Sleep(gap)
		start := time.Now()
		if err := step(ctrl, log, cg, sg, argv, o.gate); err != nil {
			_ = p.Kill()
			return err
		}
		times = append(times, time.Since(start))
	}
	fmt.Println(stepsLine(times))
	return nil
}

// step is one step, timed by the caller. With gate, the step is asked
// for first and its group thawed once the decision is durable: the sync
// overlaps the message and the fork, and the command runs no instruction
// before it.
func step(ctrl *os.File, log *auditLog, cg *cgroups, sg *stepGroup, argv []string, gate bool) error {
	decide := func() error {
		if log == nil {
			return nil
		}
		return log.append(record("decision", fmt.Sprintf(`"allowed":true,"reason":"rule true of tool bench allows %q"`, argv[0])))
	}
	if !gate {
		if err := decide(); err != nil {
			return err
		}
	}
	if _, err := ctrl.Write([]byte{1}); err != nil {
		return fmt.Errorf("ask for a step: %w", err)
	}
	if gate {
		if err := decide(); err != nil {
			return err
		}
		if err := sg.freeze("0"); err != nil {
			return err
		}
	}
	var b [4]byte
	if k, err := ctrl.Read(b[:]); k != 4 {
		return fmt.Errorf("the step's status: %d bytes, %v", k, err)
	}
	code := int32(binary.BigEndian.Uint32(b[:]))
	if code != 0 {
		return fmt.Errorf("the step exited %d", code)
	}
	if gate {
		if err := sg.freeze("1"); err != nil { // for the next step
			return err
		}
	}
	if sg != nil {
		// The step's peak and the sandbox's CPU, read as a result's are.
		if _, err := os.ReadFile(sg.dirs[0] + "/memory.max_usage_in_bytes"); err != nil {
			return fmt.Errorf("cgroup: the step's peak: %w", err)
		}
		if err := os.WriteFile(sg.dirs[0]+"/memory.max_usage_in_bytes", []byte("0"), 0); err != nil {
			return fmt.Errorf("cgroup: reset the step's peak: %w", err)
		}
		if _, err := os.ReadFile(cg.dirs[2] + "/cpuacct.usage"); err != nil { // hierarchies[2]
			return fmt.Errorf("cgroup: the sandbox's CPU: %w", err)
		}
	}
	if log != nil {
		// Lazy, as airlock's outcome: the next decision's sync covers it.
		if _, err := log.f.Write(record("outcome", `"exitCode":0,"killedBy":""`)); err != nil {
			return fmt.Errorf("audit: append: %w", err)
		}
	}
	return nil
}

// stepsLine is the -steps row: the count, then the median, quartiles and
// 99th percentile in ms.
func stepsLine(times []time.Duration) string {
	slices.Sort(times)
	q := func(p float64) float64 {
		return float64(times[int(p*float64(len(times)-1))].Microseconds()) / 1000
	}
	return fmt.Sprintf("%s %d %.3f %.3f %.3f %.3f", stepsRow, len(times), q(0.5), q(0.25), q(0.75), q(0.99))
}

// serveSteps is the init's side of -steps: for each byte the front sends
// on fd 3, one step of argv, its status sent back; the front's end of
// file ends it. With tasks, the tasks files of the step's group (enter:
// memory, pids) and of the sandbox's (back) are fds 4 to 7.
func serveSteps(argv []string, tasks, gate bool) (int, error) {
	var enter, back []int
	if tasks {
		enter, back = []int{4, 5}, []int{6, 7}
	}
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}}
	if gate {
		// fd 8, the frozen cgroup v2 group: the step is cloned into it,
		// and the clone (a vfork) returns once the front has thawed it
		// and the step has exec'd.
		attr.Sys = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: 8}
	}
	var req [1]byte
	for {
		if k, _ := unix.Read(3, req[:]); k != 1 {
			return 0, nil // the front is done
		}
		if err := writeZero(enter); err != nil {
			return 0, fmt.Errorf("enter the step's group: %w", err)
		}
		pid, err := syscall.ForkExec(argv[0], argv, attr)
		if berr := writeZero(back); berr != nil {
			return 0, fmt.Errorf("move back: %w", berr)
		}
		if err != nil {
			return 0, fmt.Errorf("exec %s: %w", argv[0], err)
		}
		code, err := reap(pid)
		if err != nil {
			return 0, err
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(int32(code)))
		if _, err := unix.Write(3, b[:]); err != nil {
			return 0, fmt.Errorf("send the status: %w", err)
		}
	}
}

// writeZero moves this thread into each tasks file's group.
func writeZero(fds []int) error {
	for _, fd := range fds {
		if _, err := unix.Write(fd, []byte("0")); err != nil {
			return errors.New("tasks file " + strconv.Itoa(fd) + ": " + err.Error())
		}
	}
	return nil
}

// serve is -serve: the floor under a command line's step (airlock session
// exec): it prints "ready", then, for each connection to the unix socket
// at path (bench/floor/client), runs one step and answers its status, one
// byte, until its standard input ends.
func serve(path string, step func() error) error {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		ln.Close()
	}()
	fmt.Println("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil // closed: done
		}
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err == nil {
			code := byte(0)
			if err := step(); err != nil {
				fmt.Fprintln(os.Stderr, "floor:", err)
				code = 125
			}
			c.Write([]byte{code})
		}
		c.Close()
	}
}
