package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"github.com/airlock-sandbox/airlock/sandbox/internal/macbox"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
	"golang.org/x/sys/unix"
)

// On macOS a sandbox is a box (package macbox): a private directory with
// the workspace copy, scratch and findings, and each command run by
// airlock's own binary as its launcher (its rlimits, then sandbox-exec
// with a profile generated from the policy, package seatbelt) in a
// session of its own, watched until it and every process it left are
// dead. docs/sandbox.md, "macOS", says what each control is there.

// PrivateListener reports whether the proxy's listener is the sandbox's
// alone: on macOS it is on the host's loopback, where any local process
// may connect to it (Seatbelt lets the command reach it and nothing
// else, but cannot keep others from it). The enforcer refuses a task
// whose proxy would add credentials there.
const PrivateListener = false

// Sandbox is one started run. Its methods are safe for concurrent use.
type Sandbox struct {
	cfg     Config
	session bool
	box     *macbox.Box
	dst     *findings.Dest
	lis     net.Listener
	port    int
	stopCtx func() bool

	mu       sync.Mutex
	released bool
	run      *macbox.Run
	// pending is a cap that tripped before the run started (output).
	pending limits.KilledBy
	killed  atomic.Bool

	torn     chan struct{}
	tornOnce sync.Once

	once   sync.Once
	result Result
	err    error
}

// startSandbox is Start's body, shared with StartSession.
func startSandbox(ctx context.Context, cfg Config, session bool) (*Sandbox, error) {
	if err := darwinRefuses(cfg); err != nil {
		return nil, err
	}
	if _, err := checkRequire(cfg.Require, cfg.Proxy); err != nil {
		return nil, err
	}
	// A session runs steps, never a Release.
	s := &Sandbox{cfg: cfg, session: session, released: session, torn: make(chan struct{})}
	if err := s.start(); err != nil {
		s.teardown()
		if s.dst != nil {
			s.dst.Discard()
		}
		return nil, err
	}
	s.stopCtx = context.AfterFunc(ctx, func() { s.end(ctx) })
	return s, nil
}

// darwinRefuses refuses what a Mac's sandbox cannot do: run as root
// (the command would run as root), an image root (its layers are
// unpacked on Linux only), and a sandbox without Seatbelt.
func darwinRefuses(cfg Config) error {
	switch {
	case os.Geteuid() == 0:
		return fmt.Errorf("sandbox: %w: macOS runs the command as airlock's own user, and airlock refuses to run it as root: run airlock as an ordinary user", ErrRequirement)
	case cfg.Root != "":
		return errors.New("sandbox: an image root needs Linux: macOS shows the host's own system trees through the profile")
	}
	if _, err := os.Stat(sandboxExec); err != nil {
		return fmt.Errorf("sandbox: %w: Seatbelt: %v", ErrRequirement, err)
	}
	return nil
}

func (s *Sandbox) start() error {
	var err error
	if s.cfg.Findings != "" {
		if s.dst, err = openFindings(s.cfg.Findings, s.cfg.ReadWrite); err != nil {
			return err
		}
	}
	if s.cfg.Proxy {
		if s.lis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return fmt.Errorf("sandbox: the proxy's listener: %w", err)
		}
		s.port = s.lis.Addr().(*net.TCPAddr).Port
	}
	p, err := darwinPlatform()
	if err != nil {
		return err
	}
	s.box, err = macbox.New(macbox.Config{ID: s.cfg.ID, Workspace: s.cfg.Workspace, Original: s.session,
		SearchPath: s.cfg.SearchPath, ReadOnly: s.cfg.ReadOnly, ReadWrite: s.cfg.ReadWrite, Hide: s.cfg.Hide,
		Binds: darwinBinds(s.cfg.Binds, p.Self), Caps: s.cfg.Caps, ProxyPort: s.port, ProxyAuth: s.cfg.ProxyAuth,
		Trustd: slices.Contains(s.cfg.Weaker, weakerTrustd), Platform: p})
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if s.cfg.Probes != nil {
		return probesPassed(s.probe(*s.cfg.Probes))
	}
	return nil
}

// darwinBinds are cfg's binds as the box shows them: by their host
// path, airlock's own binary for BindSelf's.
func darwinBinds(binds []Bind, self string) []macbox.Bind {
	out := make([]macbox.Bind, len(binds))
	for i, b := range binds {
		out[i] = macbox.Bind{Host: b.Host, Inside: b.Inside}
		if b.Host == initproc.SelfExe {
			out[i].Host = self
		}
	}
	return out
}

// probe runs the start-up probes under a command's profile.
func (s *Sandbox) probe(req ProbeRequest) []ProbeResult {
	home, _ := os.UserHomeDir()
	caps := s.cfg.Caps
	res := s.box.Probe(s.box.ProbeChecks(home, req.CanaryFile, req.CanaryAddr),
		macbox.ProbeCaps(macbox.Caps{Wall: caps.Wall, CPU: caps.CPU, MemoryBytes: caps.MemoryBytes, Tasks: caps.Tasks}))
	out := make([]ProbeResult, len(res))
	for i, r := range res {
		out[i] = ProbeResult{Name: r.Name, OK: r.OK, Detail: r.Detail}
	}
	return out
}

// pid returns the command's process id (its process group's), 0 before
// Release.
func (s *Sandbox) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return 0
	}
	return s.run.Pid()
}

// Release starts the command; the wall clock counts from here.
func (s *Sandbox) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return errors.New("sandbox: already released")
	}
	s.released = true
	if s.killed.Load() {
		return fmt.Errorf("sandbox: release: %w", ErrSessionEnded)
	}
	c := s.cfg.Caps
	run, err := s.box.Start(s.command(s.cfg.Path, s.cfg.Tree, s.cfg.Args, s.cfg.Env, s.cfg.Dir, s.cfg.Stdin, s.cfg.Stdout, s.cfg.Stderr,
		c.OutputBytes, macbox.Caps{Wall: c.Wall, CPU: c.CPU, MemoryBytes: c.MemoryBytes, Tasks: c.Tasks}))
	if errors.Is(err, macbox.ErrStart) {
		return fmt.Errorf("%w: exec %s: %w", ErrStepStart, s.cfg.Path, err)
	}
	if err != nil {
		return fmt.Errorf("sandbox: release: %w", err)
	}
	s.run = run
	if s.pending != "" {
		run.Kill(s.pending)
	}
	return nil
}

// command is a macbox command with its streams behind the output cap,
// whose trip kills the run.
func (s *Sandbox) command(path, tree string, args, env []string, dir string, stdin io.Reader, stdout, stderr io.Writer, output int64, caps macbox.Caps) macbox.Command {
	oc := newOutputCap(output, func() { s.kill(limits.KilledByOutput) })
	out, errw := oc.writers(orDiscard(stdout), orDiscard(stderr))
	if stdin != nil {
		stdin = readerOnly{stdin} // a pipe, never the caller's own descriptor
	}
	return macbox.Command{Path: path, Tree: tree, Args: args, Env: env, Dir: dir, Stdin: stdin, Stdout: out, Stderr: errw, Caps: caps}
}

// readerOnly hides what else a reader is (an *os.File): os/exec then
// gives the command a pipe.
type readerOnly struct{ io.Reader }

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// kill ends the current command for k (see macbox.Run.Kill).
func (s *Sandbox) kill(k limits.KilledBy) {
	s.mu.Lock()
	run := s.run
	if run == nil && s.pending == "" {
		s.pending = k
	}
	s.mu.Unlock()
	if run != nil {
		run.Kill(k)
	}
}

// killAll kills the current command's tree on airlock's own behalf.
func (s *Sandbox) killAll() {
	s.killed.Store(true)
	s.kill("")
}

// end ends the sandbox when its context is done: at once, or for a
// Terminated cause its signal to the command's process group, then its
// Grace.
func (s *Sandbox) end(ctx context.Context) {
	s.mu.Lock()
	run := s.run
	s.mu.Unlock()
	if t := TerminationOf(ctx); t != nil && run != nil && run.Signal(t.Signal) == nil {
		grace := time.NewTimer(t.Grace)
		defer grace.Stop()
		select {
		case <-s.torn:
			return
		case <-grace.C:
		}
	}
	s.killAll()
}

func (s *Sandbox) finish() (Result, error) {
	res := Result{ExitCode: -1}
	s.mu.Lock()
	run := s.run
	s.released = true // no Release after this
	s.mu.Unlock()
	if run != nil {
		res = outcome(run.Wait(), s.cfg.Caps.CPU)
		res.Path = s.box.Name(run.Program)
	}
	var err error
	if s.dst != nil {
		res.FindingsSkipped, err = s.copyOut()
	}
	res.Receipt = s.receipt(run)
	s.teardown()
	return res, err
}

// outcome is a run's Result.
func outcome(o macbox.Outcome, capCPU time.Duration) Result {
	res := Result{ExitCode: o.ExitCode, Signal: o.Signal, KilledBy: string(o.KilledBy), Wall: o.Wall, CPU: o.CPU,
		PeakMemoryBytes: o.PeakMemoryBytes}
	if len(o.Survivors) > 0 {
		res.InitDied = fmt.Sprintf("processes %v of the command survived every kill: the sandbox's integrity is not assured", o.Survivors)
		res.ExitCode, res.Signal = -1, 0
	}
	return res
}

// copyOut copies the box's findings to the findings directory.
func (s *Sandbox) copyOut() ([]string, error) {
	src, err := openDir(s.box.Findings)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w: %w", findings.ErrLost, err)
	}
	defer unix.Close(src)
	skipped, err := s.dst.CopyOut(src, s.cfg.Caps.DiskWriteBytes)
	if err != nil {
		err = fmt.Errorf("sandbox: %w", err)
	}
	return skipped, err
}

// receipt names each control's mechanism for the last command run.
func (s *Sandbox) receipt(run *macbox.Run) map[string]string {
	var rl []seatbelt.Rlimit
	var notes map[string]string
	if run != nil {
		rl, notes = run.Rlimits, run.Notes
	} else {
		p, _ := darwinPlatform()
		if p.Limits != nil {
			rl, notes = seatbelt.Rlimits(s.cfg.Caps, p.Limits())
		}
	}
	r := seatbelt.Receipt(s.cfg.Caps, rl, notes, s.port, slices.Contains(s.cfg.Weaker, weakerTrustd),
		fmt.Sprintf("the session's copies watched every %v (killed past %d bytes together: no volume of a fixed size); RLIMIT_FSIZE for any one file",
			macbox.Poll*5, s.cfg.Caps.DiskWriteBytes))
	r["output"] = s.outputReceipt()
	r["init"] = InitProgram(context.Background())
	r["probes"] = "run before the command from airlock's own binary, under the command's profile with that binary allowed"
	return r
}

// fullReceipt names each control's mechanism between commands.
func (s *Sandbox) fullReceipt() map[string]string { return s.receipt(nil) }

// teardown releases what the sandbox holds.
func (s *Sandbox) teardown() {
	if s.stopCtx != nil {
		s.stopCtx()
	}
	s.tornOnce.Do(func() { close(s.torn) })
	if s.lis != nil {
		s.lis.Close()
	}
	if s.dst != nil {
		s.dst.Close()
	}
	if s.box != nil {
		s.box.Close()
	}
}

// signal sends sig to the current command's process group.
func (s *Sandbox) signal(sig syscall.Signal) error {
	s.mu.Lock()
	run := s.run
	s.mu.Unlock()
	if run == nil {
		return os.ErrProcessDone
	}
	return run.Signal(sig)
}

// openDir opens the box's directory p to be read by descriptor, p itself
// not followed if it is a link.
func openDir(p string) (int, error) {
	return unix.Open(p, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}
