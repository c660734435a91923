package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/internal/reexec"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
	"github.com/airlock-sandbox/airlock/sandbox/idmap"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"golang.org/x/sys/unix"
)

// Sandbox is one started run. Its methods are safe for concurrent use.
type Sandbox struct {
	cfg     Config
	session bool
	cmd     *exec.Cmd
	c       *initproc.Ctrl
	group   *limits.Group
	lis     net.Listener
	port    int
	finds   int            // descriptor of the sandbox's /findings tmpfs, -1 when closed
	dst     *findings.Dest // the host's findings directory, nil without Config.Findings
	work    int            // descriptor of the sandbox's /workspace tmpfs, -1 when closed
	// orig keeps a session's workspace stream as sent, for Changes
	// (changes_linux.go); nil for a single run or without a workspace.
	orig    *os.File
	receipt map[string]string
	// rootPath is Config.Root when the init reaches it by path (rootless).
	rootPath string
	// hole is the test hole a test binary asked for (initproc.Hole): nil
	// in airlock's own binary.
	hole *initproc.Hole
	// groups, in a rootless run whose caller has supplementary groups,
	// is how they are dropped (nil otherwise).
	groups *idmap.Groups
	// init is the program the init runs from (initexe_linux.go).
	init initExe
	// network is how the sandbox is networked (initproc.NetOwn unless
	// the host refuses a network namespace: container_linux.go).
	network string
	// noCloneInto: the host refuses clone3, so the init is started
	// without CLONE_INTO_CGROUP and placed after (container_linux.go).
	noCloneInto bool
	// initOut is the init's own stdout and stderr; sio, from Release,
	// the single run's target's streams.
	initOut initOutput
	sio     *stepIO
	// next and back, under Session.mu, are a session's step groups
	// (step_group_linux.go): the next step's group, made while a step
	// runs, and the session group's v1 tasks files.
	next chan stepGroup
	back []*os.File

	mu        sync.Mutex
	released  time.Time
	path      string // the file the target runs, once it started
	stopWatch context.CancelFunc
	watchDone chan struct{}
	stopCtx   func() bool
	// torn is closed when the sandbox is torn down.
	torn     chan struct{}
	tornOnce sync.Once

	// killed is set when airlock itself ends the init (Kill, the
	// context, a session's end): its death is then no integrity failure.
	killed atomic.Bool

	once   sync.Once
	result Result
	err    error
}

// startSandbox is Start's body, shared with StartSession.
func startSandbox(ctx context.Context, cfg Config, session bool) (*Sandbox, error) {
	need, err := checkRequire(cfg.Require, cfg.Proxy)
	if err != nil {
		return nil, err
	}
	h, err := initproc.RequestedHole()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s := &Sandbox{cfg: cfg, session: session, finds: -1, work: -1, receipt: map[string]string{}, hole: h, torn: make(chan struct{})}
	if cfg.Findings != "" {
		// Made (or taken) now: a destination that will not do refuses
		// the run before anything runs, not after.
		if s.dst, err = openFindings(cfg.Findings, cfg.ReadWrite); err != nil {
			return nil, err
		}
	}
	if session && cfg.Workspace != "" {
		if s.orig, err = openOriginal(); err != nil {
			s.abort()
			return nil, err
		}
	}
	if err := s.start(ctx, need); err != nil {
		s.abort()
		return nil, err
	}
	return s, nil
}

// start runs the init and takes it to "ready" (and through the probes).
// The init is in its group from its first instruction on cgroup v2
// (CLONE_INTO_CGROUP) and moves itself into the v1 hierarchies before it
// reads its config (see place_linux.go): nothing it does for the run
// happens outside the group, and no cgroup.procs write is on the way.
func (s *Sandbox) start(ctx context.Context, need needs) error {
	go checkPidfdOnce()
	if err := s.checkGroups(); err != nil {
		return err
	}
	g, err := limits.New(s.cfg.Caps, limits.Options{Name: "sandbox-" + s.cfg.ID, Rootless: os.Geteuid() != 0, Require: s.cfg.Require})
	if err != nil {
		if errors.Is(err, limits.ErrUnavailable) {
			return fmt.Errorf("sandbox: %w: %w", ErrRequirement, err)
		}
		return fmt.Errorf("sandbox: resource caps: %w", err)
	}
	s.group = g
	v1 := g.Dirs().V1
	tasks, err := openTasks(v1)
	if err != nil {
		return err
	}
	defer closeFiles(tasks)
	c, child, err := initproc.NewCtrlPair()
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	s.c = c
	defer child.Close()
	setupR, setupW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox: setup pipe: %w", err)
	}
	defer setupR.Close()
	extra := []*os.File{child, setupR}
	if s.cfg.Root != "" {
		root, detached, err := openRoot(s.cfg.Root)
		if err != nil {
			setupW.Close()
			return err
		}
		if !detached {
			s.rootPath = s.cfg.Root
		}
		defer root.Close()
		extra = append(extra, root)
	}
	extra = append(extra, tasks...)
	if err := s.chooseInit(); err != nil {
		setupW.Close()
		return err
	}
	defer s.init.close()
	extra = append(extra, s.init.files()...)
	err = s.startInit(extra, len(tasks), need)
	child.Close()
	setupR.Close()
	closeFiles(tasks)
	if err != nil {
		setupW.Close()
		return err
	}
	s.stopCtx = context.AfterFunc(ctx, func() { s.end(ctx) })
	if s.groups != nil {
		if err := s.writeMaps(setupW); err != nil {
			setupW.Close()
			return err
		}
	}
	if _, inV2 := s.group.Dir(); !inV2 && len(v1) == 0 {
		// No cgroup at all: Place only remembers the process (pidfd).
		if err := s.group.Place(s.cmd.Process.Pid); err != nil {
			setupW.Close()
			return fmt.Errorf("sandbox: place the init in its group: %w", err)
		}
	}
	setupErr := make(chan error, 1)
	go func() { setupErr <- s.writeSetup(setupW, need) }()
	// The init says so once it sits in its group, first thing; the parent
	// checks where it sits while the init builds the sandbox.
	if _, _, err := s.setupMsg(initproc.MsgPlaced, setupErr); err != nil {
		return err
	}
	type placement struct {
		receipt, ipc string
		err          error
	}
	placedCh := make(chan placement, 1)
	go func() {
		p := placement{}
		p.receipt, p.err = s.checkPlacement(v1, len(tasks))
		if p.err == nil {
			// Before anything runs inside: the init makes no IPC object.
			p.ipc, p.err = s.boundIPC()
		}
		placedCh <- p
	}()
	m, fds, err := s.setupMsg(initproc.MsgReady, setupErr)
	p := <-placedCh
	if err == nil {
		err = <-setupErr
		if err != nil {
			err = fmt.Errorf("sandbox: %w", err)
		}
	}
	if err == nil {
		err = p.err
	}
	if err != nil {
		initproc.CloseAll(fds)
		return err
	}
	if err := s.takeReady(m, fds); err != nil {
		return err
	}
	s.receipt["placement"], s.receipt["ipc"] = p.receipt, p.ipc
	if ctx.Err() != nil {
		return fmt.Errorf("sandbox: %w", ctx.Err())
	}
	if s.cfg.Probes != nil {
		return probesPassed(m.Probes)
	}
	return nil
}

// setupMsg receives the init's next setup message, which must be of kind
// want; a failed message, a dead init or a failed write of the setup is
// an error. The caller owns the descriptors that came with it.
func (s *Sandbox) setupMsg(want string, setupErr <-chan error) (initproc.Message, []int, error) {
	m, fds, err := s.c.Recv()
	switch {
	case err != nil:
		return m, nil, s.diedInSetup(err, setupErr)
	case m.Kind == initproc.MsgFailed:
		initproc.CloseAll(fds)
		if serr := setupCause(setupErr); serr != nil {
			return m, nil, fmt.Errorf("sandbox: %w", serr)
		}
		return m, nil, fmt.Errorf("sandbox: setup: %s: %s", m.Stage, m.Error)
	case m.Kind != want:
		initproc.CloseAll(fds)
		return m, nil, fmt.Errorf("sandbox: protocol: want %s, got %q", want, m.Kind)
	}
	return m, fds, nil
}

// setupCause is the setup writer's own reason to stop sending (a
// workspace over a cap), which the init only sees as a truncated stream;
// nil when the writer ended well or only because the init went away.
func setupCause(setupErr <-chan error) error {
	select {
	case err := <-setupErr:
		if err != nil && !errors.Is(err, syscall.EPIPE) {
			return err
		}
	case <-time.After(time.Second): // still writing to an init that stopped reading
	}
	return nil
}

// checkPlacement checks that the init moved itself into the group's v1
// directories v1 (hierarchies of them, distinct), else places it the slow
// way, and returns the receipt of how it got in.
func (s *Sandbox) checkPlacement(v1 map[string]string, hierarchies int) (string, error) {
	_, inV2 := s.group.Dir()
	switch err := placed(s.cmd.Process.Pid, v1); {
	case err != nil:
		// Not where it moved itself: place it the slow way.
		if perr := s.group.Place(s.cmd.Process.Pid); perr != nil {
			return "", fmt.Errorf("sandbox: place the init in its group (%v): %w", err, perr)
		}
		return "cgroup.procs (limits.Place), after the init's own move failed: " + err.Error(), nil
	case inV2 || len(v1) > 0:
		return placementReceipt(inV2, hierarchies), nil
	default:
		return "no cgroup: the init is tracked by pidfd", nil
	}
}

// checkPidfdOnce has the os package's one-time check of pidfd support
// (it forks and reaps a throwaway child, some 0.1 ms, the first time a
// process starts another) made while the group is being made rather than
// inside the init's start: os.FindProcess makes the same check.
var checkPidfdOnce = sync.OnceFunc(func() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
})

// initCmd is the init's command: this binary or airlock-init
// (chooseInit), executed into new namespaces with a clean environment,
// stdio through pipes only. extra are its descriptors 3 and up (fdCtrl,
// fdSetup, fdRoot with Root, the tasks files, then the init's files).
func (s *Sandbox) initCmd(extra []*os.File, tasks int) *exec.Cmd {
	rootful := setsGroups()
	hostUID, hostGID := os.Getuid(), os.Getgid()
	if rootful {
		hostUID, hostGID = sandboxHostIDs()
	}
	inside := s.hole.ID()
	attr := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
			unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: inside, HostID: hostUID, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: inside, HostID: hostGID, Size: 1}},
		GidMappingsEnableSetgroups: rootful,
		// The init is uid 65534 from its first instruction; ambient
		// capabilities (in its own user namespace only) let it build the
		// sandbox, and it drops them all before the target runs.
		Credential:  &syscall.Credential{Uid: uint32(inside), Gid: uint32(inside), Groups: []uint32{}, NoSetGroups: !rootful},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_RESOURCE},
		Setsid:      true,
		Pdeathsig:   syscall.SIGKILL,
	}
	if s.groups != nil {
		// Rootless with supplementary groups: the maps are written after
		// the start (writeMaps), the init's uid and gid are then the
		// caller's as 65534 inside with no setuid, and it drops the
		// groups itself (CAP_SETGID, in its namespace only).
		attr.UidMappings, attr.GidMappings, attr.Credential = nil, nil, nil
		attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SETGID)
	}
	if s.hostNetwork() {
		attr.Cloneflags &^= unix.CLONE_NEWNET
	}
	if fd, ok := s.group.Dir(); ok && !s.noCloneInto {
		attr.UseCgroupFD, attr.CgroupFD = true, fd
	}
	args := []string{initproc.Arg0}
	if s.cfg.Root != "" {
		args = append(args, initproc.RootArg)
	}
	if tasks > 0 {
		args = append(args, initproc.TasksArg+strconv.Itoa(tasks))
	}
	if s.groups != nil {
		args = append(args, initproc.MapsArg)
	}
	if s.init.self != nil {
		args = append(args, initproc.SelfArg)
	}
	if s.hole != nil {
		// A test hole is registered after the init's package
		// initialiser: Init.
		args = append(args, initproc.LateArg)
	}
	// GOTRACEBACK=none: should the init crash all the same, its stderr
	// (the target's, in a single run) gets no stack trace, whose frames
	// name the host's build paths. GOMAXPROCS=2: with one processor the
	// runtime's monitor took it back from the main thread in each of its
	// blocking system calls and woke another thread for it, which found
	// nothing to do (docs/sandbox.md, "Speed"); an idle second processor
	// keeps the monitor out of a short call's way.
	env := []string{reexec.Mark(initproc.Arg0), initproc.EnvBuild + "=" + initproc.Build(), "GOMAXPROCS=2", "GOTRACEBACK=none"}
	if raceEnv != "" {
		env = append(env, raceEnv)
	}
	return &exec.Cmd{
		Path: s.init.path(len(extra)),
		Args: args,
		Env:  env,
		// The init's own streams: no input (/dev/null), and one pipe of
		// its own for what it writes, never a descriptor of the caller's
		// nor the target's streams (those come with Release or each step).
		Stdout:      &s.initOut,
		Stderr:      &s.initOut,
		ExtraFiles:  extra,
		SysProcAttr: attr,
		WaitDelay:   2 * time.Second,
	}
}

// checkGroups refuses a rootless run whose caller has supplementary
// groups that cannot be dropped, and otherwise remembers how to drop
// them (package idmap; docs/sandbox.md, "Groups").
func (s *Sandbox) checkGroups() error {
	if setsGroups() {
		s.receipt["groups"] = "none: the init's credentials set an empty group list"
		return nil
	}
	g, err := idmap.Inspect()
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := g.Refusal(); err != nil {
		return fmt.Errorf("sandbox: %w: %w", ErrRequirement, err)
	}
	s.receipt["groups"] = "none: the caller has no supplementary groups"
	if g.CanDrop() {
		s.groups = &g
	}
	return nil
}

// writeMaps writes the init's user namespace maps: the uid map itself
// (the caller's uid as the one uid inside, which an unprivileged process
// may write), the gid map with newgidmap (the caller's gid and one
// subordinate gid, which keeps setgroups allowed); then it tells the init
// on the setup pipe w, before the config.
func (s *Sandbox) writeMaps(w *os.File) error {
	pid := s.cmd.Process.Pid
	inside := s.hole.ID()
	uidMap := fmt.Sprintf("%d %d 1\n", inside, os.Getuid())
	if err := os.WriteFile("/proc/"+strconv.Itoa(pid)+"/uid_map", []byte(uidMap), 0); err != nil {
		return fmt.Errorf("sandbox: write the init's uid map: %w", err)
	}
	if out, err := exec.Command(s.groups.NewGIDMap, s.groups.MapArgs(pid, inside)...).CombinedOutput(); err != nil {
		return fmt.Errorf("sandbox: newgidmap: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if _, err := w.Write([]byte{initproc.MapsWritten}); err != nil {
		return fmt.Errorf("sandbox: tell the init its maps are written: %w", err)
	}
	s.receipt["groups"] = "caller's supplementary groups dropped: newgidmap with a subordinate gid of " + s.groups.User
	return nil
}

// writeSetup sends the init its config and, if any, the workspace.
func (s *Sandbox) writeSetup(w *os.File, need needs) error {
	defer w.Close()
	cfg := initproc.Config{
		Path: s.cfg.Path, Tree: s.cfg.Tree, Args: s.cfg.Args, Env: s.cfg.Env, Dir: s.cfg.Dir, Hostname: s.cfg.Hostname,
		ReadOnly: s.cfg.ReadOnly, ReadWrite: s.cfg.ReadWrite, Binds: s.cfg.Binds, Hide: s.cfg.Hide,
		TmpfsBytes: s.cfg.Caps.DiskWriteBytes, Workspace: s.cfg.Workspace != "", Proxy: s.cfg.Proxy,
		Root: s.cfg.Root != "", RootPath: s.rootPath, Session: s.session,
		Rlimits: initRlimits(s.group.Rlimits()), NeedLandlock: need.landlock, NeedSeccomp: need.seccomp,
		NeedOwnProc: need.procfs, NoMemoryCgroup: s.noMemcg(), Network: s.network,
		Probe: s.cfg.Probes,
	}
	if s.hole != nil {
		cfg.TestHole = s.hole.Name
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if err := binary.Write(w, binary.BigEndian, uint32(len(b))); err != nil {
		return fmt.Errorf("send config: %w", err)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("send config: %w", err)
	}
	if s.cfg.Workspace != "" {
		return sendWorkspace(s.cfg.Workspace, s.workspaceWriter(w), s.cfg.Caps.DiskWriteBytes, int(initproc.DiskInodes(s.cfg.Caps.DiskWriteBytes)))
	}
	return nil
}

// initRlimits converts the group's rlimits for the init's config.
func initRlimits(rs []limits.Rlimit) []initproc.Rlimit {
	out := make([]initproc.Rlimit, len(rs))
	for i, r := range rs {
		out[i] = initproc.Rlimit{Resource: r.Resource, Name: r.Name, Cur: r.Cur, Max: r.Max}
	}
	return out
}

// takeReady keeps what the init handed back: /findings, /workspace and
// the listener.
func (s *Sandbox) takeReady(m initproc.Message, fds []int) error {
	want := 2
	if s.cfg.Proxy {
		want = 3
	}
	if m.Kind != initproc.MsgReady || len(fds) != want {
		initproc.CloseAll(fds)
		return fmt.Errorf("sandbox: protocol: want ready with %d descriptors, got %q with %d", want, m.Kind, len(fds))
	}
	s.finds, s.work = fds[0], fds[1]
	if s.cfg.Proxy {
		f := os.NewFile(uintptr(fds[2]), "airlock-proxy-listener")
		lis, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("sandbox: proxy listener: %w", err)
		}
		s.lis, s.port = lis, m.Port
	}
	for k, v := range m.Receipt {
		s.receipt[k] = v
	}
	return nil
}

// Release lets the init execute the target, and starts the caps' watch
// (the wall clock counts from here).
func (s *Sandbox) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released.IsZero() {
		return errors.New("sandbox: already released")
	}
	// The target's streams, behind the run's output cap, go with release.
	oc := newOutputCap(s.cfg.Caps.OutputBytes, func() { s.group.Trip(limits.KilledByOutput) })
	sio, err := newStepIO(Step{Stdin: s.cfg.Stdin, Stdout: s.cfg.Stdout, Stderr: s.cfg.Stderr}, oc)
	if err != nil {
		return fmt.Errorf("sandbox: release: %w", err)
	}
	if err := s.c.Send(initproc.Message{Kind: initproc.MsgRelease}, sio.childFDs()...); err != nil {
		sio.close()
		return fmt.Errorf("sandbox: release: %w", err)
	}
	sio.start()
	s.sio = sio
	s.released = time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWatch, s.watchDone = cancel, make(chan struct{})
	go func() {
		defer close(s.watchDone)
		s.group.Watch(ctx, nil)
	}()
	m, fds, err := s.c.Recv()
	initproc.CloseAll(fds)
	switch {
	case err != nil && (s.group.KilledBy() != "" || !s.killed.Load()):
		// The init is gone before it could say the target started: a
		// cap tripped (output floods fast), or it died on its own, maybe
		// of what it had forked. Either way the target may have run, and
		// Wait reports the kill, or the init's death (Result.InitDied).
		return nil
	case err != nil:
		return fmt.Errorf("sandbox: release: the init died: %w", err)
	case m.Kind == initproc.MsgFailed && m.Stage == "exec":
		return fmt.Errorf("%w: exec %s: %s", ErrStepStart, s.cfg.Path, m.Error)
	case m.Kind == initproc.MsgFailed:
		return fmt.Errorf("sandbox: %s %s: %s", m.Stage, s.cfg.Path, m.Error)
	case m.Kind != initproc.MsgStarted:
		return fmt.Errorf("sandbox: protocol: want started, got %q", m.Kind)
	}
	s.path = m.Path
	return nil
}

// killAll kills the init (and with it the pid namespace) on airlock's
// own behalf, and every process of the group.
func (s *Sandbox) killAll() {
	s.killInit()
	s.group.KillAll()
}

// signal sends sig to the init, which forwards SIGTERM, SIGINT, SIGHUP,
// SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT and SIGWINCH to the target (or a
// session's current step) and absorbs every other signal. Only once the
// init forwards: after Release, or in a session.
func (s *Sandbox) signal(sig syscall.Signal) error {
	return s.cmd.Process.Signal(sig)
}

// end ends the sandbox when its context is done: at once, or, for a
// Terminated cause, its Grace later unless the sandbox was torn down by
// then. A released run's target is sent the signal first; a session's
// current step gets it from its own watch (Exec), whose context is this
// one or another. A run not yet released has nothing of the caller's
// running: it ends at once.
func (s *Sandbox) end(ctx context.Context) {
	s.mu.Lock()
	released := !s.released.IsZero()
	s.mu.Unlock()
	if t := TerminationOf(ctx); t != nil && (s.session || released) {
		if s.session || s.signal(t.Signal) == nil {
			grace := time.NewTimer(t.Grace)
			defer grace.Stop()
			select {
			case <-s.torn:
				return
			case <-grace.C:
			}
		}
	}
	s.killInit()
}

// killInit kills the init on airlock's own behalf.
func (s *Sandbox) killInit() {
	s.killed.Store(true)
	s.cmd.Process.Kill()
}

// finish is Wait's body.
func (s *Sandbox) finish() (Result, error) {
	var st *initproc.ExitStatus
	for st == nil {
		m, fds, err := s.c.Recv()
		initproc.CloseAll(fds)
		if err != nil {
			break // the init is gone: killed, or it failed
		}
		if m.Kind == initproc.MsgExited {
			st = m.Status
		}
	}
	waitErr := s.cmd.Wait()
	s.mu.Lock()
	released, stop, done, sio, ran := s.released, s.stopWatch, s.watchDone, s.sio, s.path
	s.mu.Unlock()
	if sio != nil {
		// The init is dead, and with it every process of its pid
		// namespace: the target's streams are at their end.
		sio.wait()
		sio.close()
	}
	if stop != nil {
		stop()
		<-done
	}
	res := Result{ExitCode: -1, Path: ran}
	if !released.IsZero() {
		res.Wall = time.Since(released)
	}
	if err := s.group.KillAll(); err != nil {
		return res, s.teardownErr(fmt.Errorf("sandbox: kill the tree: %w", err))
	}
	stats, statsErr := s.group.Stats()
	res.CPU, res.PeakMemoryBytes = stats.CPU, stats.PeakMemoryBytes
	res.KilledBy = string(s.group.KilledBy())
	switch {
	case st != nil:
		res.ExitCode, res.Signal = st.Code, st.Signal
		if res.CPU == 0 {
			res.CPU = time.Duration(st.UserUs+st.SysUs) * time.Microsecond
		}
		if res.PeakMemoryBytes == 0 {
			res.PeakMemoryBytes = st.MaxRSS * 1024
		}
	default:
		// The init died before the target did: whatever killed it (a
		// cap, Kill, an OOM kill of the init) ended the target too.
		res.Signal = int(syscall.SIGKILL)
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.Signal = int(ws.Signal())
			}
		}
		if res.KilledBy == "" && !s.killed.Load() {
			// Nothing of airlock's killed it: the init crashed, or
			// something inside got a signal through to it.
			res.InitDied = initDeath(waitErr) + s.initOut.said()
			res.Signal = 0
		}
	}
	if res.KilledBy == "" {
		// An rlimit's kill: RLIMIT_FSIZE, or RLIMIT_CPU (its SIGXCPU, or
		// the SIGKILL of its hard limit for a target that ignores it).
		res.KilledBy = string(limits.SignalCause(syscall.Signal(res.Signal), res.CPU, s.cfg.Caps.CPU))
	}
	var err error
	if s.dst != nil && s.finds >= 0 {
		res.FindingsSkipped, err = s.copyOut()
	}
	res.Receipt = s.fullReceipt()
	if terr := s.teardownErr(nil); err == nil {
		err = terr
	}
	if err == nil && statsErr != nil {
		err = fmt.Errorf("sandbox: read the group's stats: %w", statsErr)
	}
	return res, err
}

// initDeath says how the init died, from its wait status.
func initDeath(waitErr error) string {
	how := "without reporting the target's end"
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Signaled():
				how = "of signal " + strconv.Itoa(int(ws.Signal())) + " (" + unix.SignalName(ws.Signal()) + ")"
			case ws.Exited():
				how = "with exit status " + strconv.Itoa(ws.ExitStatus()) + " before the target ended"
			}
		}
	}
	return "the sandbox's init died " + how + ": the sandbox's integrity is not assured"
}

// fullReceipt merges the group's mechanisms with the init's.
func (s *Sandbox) fullReceipt() map[string]string {
	r := s.group.Receipt()
	for k, v := range s.receipt {
		r[k] = v
	}
	r["namespaces"] = s.namespacesReceipt()
	r["output"] = s.outputReceipt()
	r["init"] = "pid 1 run from " + s.init.receipt + "; non-dumpable, reaps and forwards signals; no terminal, stdio through pipes"
	return r
}

// teardownErr releases every host resource the run holds and returns
// first, or the first teardown error.
func (s *Sandbox) teardownErr(first error) error {
	if s.stopCtx != nil {
		s.stopCtx()
	}
	s.tornOnce.Do(func() { close(s.torn) })
	if s.finds >= 0 {
		unix.Close(s.finds)
		s.finds = -1
	}
	if s.dst != nil {
		s.dst.Close()
	}
	if s.work >= 0 {
		unix.Close(s.work)
		s.work = -1
	}
	if s.orig != nil {
		s.orig.Close() // the field stays: writeSetup may still hold it
	}
	if s.lis != nil {
		s.lis.Close()
	}
	s.c.Close()
	if s.group != nil {
		if err := s.group.Delete(); err != nil && first == nil {
			first = fmt.Errorf("sandbox: remove the group: %w", err)
		}
	}
	return first
}

// abort undoes a failed Start.
func (s *Sandbox) abort() {
	if s.dst != nil {
		s.dst.Discard()
	}
	if s.cmd != nil && s.cmd.Process != nil {
		s.killInit()
		if s.group != nil {
			s.group.KillAll()
		}
		s.cmd.Wait()
	}
	s.teardownErr(nil)
}
