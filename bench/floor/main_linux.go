// Command floor is the smallest program that does the work an `airlock run`
// of one command must do by its contracts, so that bench/floor/run.sh can
// time it beside `bwrap --unshare-all` (issue 15: a cold run at most 1.0x
// bwrap). It is a measurement, not a sandbox to use: no policy, no proxy,
// no probes, and no check of what it is given.
//
// One run, as airlock's (docs/sandbox.md, "Speed"):
//
//  1. with -state DIR, the decision is made durable before the command
//     runs (docs/audit.md, "Durability and failures"): one ~600-byte line
//     appended to DIR/audit.jsonl and fdatasync'd, beside the sandbox's
//     build; the init does not exec the command before the front says the
//     line is on disk;
//  2. with -cgroup, a group in the memory, pids and cpuacct v1 hierarchies
//     (airlock uses five, plus a v2 directory for cgroup.kill), with a
//     memory and a pids limit, the init put in before it execs the
//     command, the groups removed after (docs/sandbox.md, "Caps");
//  3. the namespaces bwrap --unshare-all makes (user, mount, pid, net, ipc,
//     uts, cgroup), a root that shows the host read-only with a fresh /proc
//     and a small /dev as bwrap's --ro-bind / / --proc /proc --dev /dev
//     make them (docs/sandbox.md, "The view"), no capabilities,
//     no_new_privs, and with -seccomp, -landlock a small filter and ruleset
//     (airlock's are larger); the command runs as the init's child (pid 5
//     or so: the init's runtime threads take the first ids), and the init
//     waits for it (init_linux.go);
//  4. with -state, the outcome line appended and synced, and a signed
//     checkpoint (Ed25519, the key read from DIR/key) kept in place in
//     DIR/checkpoint and synced (docs/audit.md, "Checkpoints").
//
// The init is this binary re-executed (/proc/self/exe): Go cannot fork
// without exec (the child would have one thread of a runtime that needs
// several), so a fork-without-exec init would have to be written in raw
// system calls.
//
// Usage: floor [-cgroup] [-state DIR] [-seccomp] [-landlock] [-steps N | -serve PATH] [-gate] -- COMMAND [ARG...]
//
// -steps N builds the sandbox once and times N steps of the command in it,
// the floor under a session's step (steps_linux.go); bench/session/run.sh
// prints it as the floor-sandbox-step row. -serve PATH serves such steps
// to bench/floor/client instead, the floor under `airlock session exec`
// (the floor-cli row). -gate forks each step into a frozen cgroup v2 group
// thawed once its decision is durable.
//
// -bare is no sandbox, only a split of the costs: the command itself is
// exec'd as pid 1 of the namespaces, with the host's tree (no root, no
// init, no dropped capabilities), released at once.
//
// It exits with the command's status (128+N for signal N), or 125 naming
// the step that failed; everything it made (the groups) is removed on
// every path but SIGKILL.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// initName is argv[0] of the re-executed init.
const initName = "floor-init"

func init() {
	// The init's namespace, mount and credential steps apply to the
	// calling thread and are inherited by the command it forks from the
	// same thread: keep main on the main thread.
	runtime.LockOSThread()
}

func main() {
	if os.Args[0] == initName {
		os.Exit(initMain(os.Args[1:]))
	}
	var o options
	flag.BoolVar(&o.cgroup, "cgroup", false, "put the sandbox in a memory, pids and cpuacct v1 group with limits")
	flag.StringVar(&o.state, "state", "", "append the decision and the outcome to `DIR`/audit.jsonl, synced, and keep a signed checkpoint")
	flag.BoolVar(&o.seccomp, "seccomp", false, "apply a small seccomp filter to the command")
	flag.BoolVar(&o.landlock, "landlock", false, "apply a small Landlock ruleset to the command")
	flag.BoolVar(&o.bare, "bare", false, "exec the command as pid 1 of the namespaces, with no root and no init: a measurement, not a sandbox")
	flag.BoolVar(&o.gate, "gate", false, "with -steps and -cgroup: fork each step into a frozen cgroup v2 group, thawed once its decision is durable, so that the sync overlaps the message and the fork")
	flag.StringVar(&o.serve, "serve", "", "as -steps, but serve one step to each bench/floor/client connection on the unix socket `PATH`, until stdin ends")
	n := flag.Int("steps", 0, "build the sandbox once and time `N` steps of the command in it, as a session's (steps_linux.go)")
	flag.Parse()
	if flag.NArg() == 0 || o.bare && (o.cgroup || o.state != "" || o.seccomp || o.landlock || *n != 0) || *n < 0 || o.gate && (*n == 0 && o.serve == "" || !o.cgroup) || o.serve != "" && (*n != 0 || o.bare) {
		fmt.Fprintln(os.Stderr, "usage: floor [-cgroup] [-state DIR] [-seccomp] [-landlock] [-steps N | -serve PATH] [-gate] -- COMMAND [ARG...]\n       floor -bare -- COMMAND [ARG...]")
		os.Exit(125)
	}
	if *n > 0 || o.serve != "" {
		if err := steps(o, flag.Args(), *n); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(125)
		}
		return
	}
	code, err := run(o, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(125)
	}
	os.Exit(code)
}

type options struct {
	cgroup, seccomp, landlock, bare, gate bool
	state, serve                          string
}

// run is one run: decision, sandbox, outcome. Every error is returned,
// so that a floor never silently skips a step.
func run(o options, argv []string) (code int, err error) {
	var log *auditLog
	var durable <-chan error
	if o.state != "" {
		log = &auditLog{dir: o.state}
		durable = log.decide(argv) // beside the build, as airlock does
	}
	var cg *cgroups
	if o.cgroup {
		cg = startCgroups()
		defer func() { err = errors.Join(err, cg.remove()) }()
	}
	// The init waits on this pipe for the go-ahead: one byte once the
	// decision is durable and the init is in its groups; EOF means stop.
	r, w, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("pipe: %w", err)
	}
	defer w.Close()
	args := []string{initName}
	if o.seccomp {
		args = append(args, "-seccomp")
	}
	if o.landlock {
		args = append(args, "-landlock")
	}
	args = append(args, "--")
	args = append(args, argv...)
	exe, files := "/proc/self/exe", []*os.File{os.Stdin, os.Stdout, os.Stderr, r}
	if o.bare {
		exe, args, files = argv[0], argv, files[:3]
	}
	p, err := os.StartProcess(exe, args, &os.ProcAttr{Files: files, Sys: sandboxAttr()})
	r.Close()
	if err != nil {
		return 0, fmt.Errorf("start the init: %w", err)
	}
	if !o.bare {
		if err := release(p.Pid, cg, durable, w); err != nil {
			_ = p.Kill()
			_, _ = p.Wait()
			return 0, err
		}
	}
	st, err := p.Wait()
	if err != nil {
		return 0, fmt.Errorf("wait for the init: %w", err)
	}
	code = st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if log != nil {
		if err := log.finish(code); err != nil {
			return 0, err
		}
	}
	return code, nil
}

// sandboxAttr starts the init in the namespaces bwrap --unshare-all
// makes, root mapped to the caller.
func sandboxAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
}

// release puts the init in its groups, waits until the decision is
// durable, and then lets the init exec the command.
func release(pid int, cg *cgroups, durable <-chan error, w *os.File) error {
	if cg != nil {
		if err := cg.place(pid); err != nil {
			return err
		}
	}
	if durable != nil {
		if err := <-durable; err != nil {
			return err
		}
	}
	if _, err := w.Write([]byte{1}); err != nil {
		return fmt.Errorf("release the init: %w", err)
	}
	return nil
}
