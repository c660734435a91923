package initproc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/reexec"
)

// The init's environment marker and its fixed descriptors.
const (
	Arg0     = "airlock-sandbox-init"
	RootArg  = "root"
	TasksArg = "tasks="
	// MapsArg makes the init wait, first thing, for the parent to write
	// its user namespace's maps (newgidmap, for a rootless run whose
	// caller has supplementary groups; it then says so with one byte on
	// the setup pipe) and drop its supplementary groups.
	MapsArg = "maps"
	// SelfArg says that the descriptor after the tasks files is the
	// calling binary, opened by the parent for BindSelf's copy: an init
	// that is not that binary (airlock-init) has no other way to it.
	SelfArg = "self"
	fdCtrl  = 3 // control socket
	fdSetup = 4 // setup pipe: config, then the workspace stream (stream.go)
	fdRoot  = 5 // Config.Root, opened by the parent (only with Root)
)

// LateArg, among the init's arguments, makes it wait for sandbox.Init in
// main instead of running from this package's initialiser (see the
// package doc): the parent passes it only with a test hole, registered
// after this package's initialiser (Hole).
const LateArg = "late"

// init refuses an init of another build than its parent's (EnvBuild),
// then runs a sandbox's init, unless asked to run late. Either way it
// locks the init to its startup thread, the thread group leader, for
// good: package initialisers run there (the runtime keeps the main
// goroutine on it until main), and a lock taken in one keeps main on it
// too. The init moves that thread into the group's cgroup v1 hierarchies
// and forks every target from it (place_linux.go).
func init() {
	if (reexec.Is(Arg0) || reexec.Is(CheckArg0)) && os.Getenv(EnvBuild) != Build() {
		os.Stderr.WriteString(OtherBuildMessage)
		os.Exit(ExitOtherBuild)
	}
	if !IsInit() {
		return
	}
	runtime.LockOSThread()
	setComm()
	for _, a := range os.Args[1:] {
		if a == LateArg {
			return
		}
	}
	Main()
}

// IsInit reports whether this process is a sandbox's init.
func IsInit() bool {
	return os.Getpid() == 1 && len(os.Args) > 0 && os.Args[0] == Arg0 && reexec.Is(Arg0)
}

// Main runs the sandbox's init (re-executed by sandbox.Start into fresh
// namespaces, as pid 1) and exits with its status; it never returns.
func Main() {
	// Mount, capability and credential calls below must all come from the
	// thread that later forks the target, and it never exits.
	runtime.LockOSThread()
	os.Unsetenv(reexec.Env)
	os.Unsetenv(EnvBuild)
	os.Exit(runInit())
}

// initState is the init's side of one run.
type initState struct {
	c       *Ctrl
	cfg     Config
	receipt map[string]string
	// hole is the test hole the parent sent (checkHole), nil in
	// airlock's own binary.
	hole *Hole
	// oom is the init's own oom_score_adj (spawnVictim).
	oom oomAdj
	// copied is set once a session has had its one copy-in (copyIn).
	copied bool
	// hostProc: the host refused a fresh /proc (container_linux.go), and
	// the init and the sandbox use the host's.
	hostProc bool
}

// runInit is the init's whole life; its return value is the init's exit
// status (the parent reads the target's from the control socket).
func runInit() int {
	s := &initState{c: &Ctrl{fd: fdCtrl}, receipt: map[string]string{}, oom: oomAdj{fd: -1}}
	hostProc, err := privateProc()
	if err != nil {
		s.fail("proc", err)
		return 1
	}
	s.hostProc = hostProc
	// After privateProc: psx finds the threads under /proc/1.
	if slices.Contains(os.Args[1:], MapsArg) {
		if err := dropGroups(); err != nil {
			s.fail("groups", err)
			return 1
		}
	}
	if first, n := tasksFDs(); n > 0 {
		if err := placeSelf(first, n); err != nil {
			s.fail("cgroup", err)
			return 1
		}
	}
	if err := s.c.Send(Message{Kind: MsgPlaced}); err != nil {
		return 1
	}
	// The signal set-up (a round trip between two threads per signal)
	// runs beside the sandbox's build, once the init sits in its group;
	// the target waits for it.
	fwc := make(chan *forwarder, 1)
	go func() { fwc <- startForwarding() }()
	if err := sanitizeFDs(); err != nil {
		s.fail("fds", err)
		return 1
	}
	// Opened while this process may (it is still dumpable, and Landlock
	// comes later): see spawnVictim.
	s.oom = openOOMAdj()
	// No core dump, no ptrace by anything without CAP_SYS_PTRACE over
	// our user namespace, no /proc/1/{exe,fd,root,mem} for the target:
	// the host binary this init runs from stays out of reach.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	setup := os.NewFile(fdSetup, "airlock-setup")
	if err := s.readConfig(setup); err != nil {
		s.fail("config", err)
		return 1
	}
	if err := s.checkHole(); err != nil {
		s.fail("config", err)
		return 1
	}
	if err := s.checkProc(); err != nil {
		s.fail("proc", err)
		return 1
	}
	if s.cfg.Root != hasRootFD() {
		s.fail("config", errors.New("the root directory descriptor and the config disagree"))
		return 1
	}
	rootfs, err := s.buildRoot(setup)
	setup.Close()
	if err != nil {
		s.fail("filesystem", err)
		return 1
	}
	lis, port, err := s.network()
	if err != nil {
		s.fail("network", err)
		return 1
	}
	if err := s.enterRoot(rootfs); err != nil {
		s.fail("pivot_root", err)
		return 1
	}
	var dirs [2]int
	for i, d := range []string{FindingsDir, WorkspaceDir} {
		dirs[i], err = unix.Open(d, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			s.fail("findings", fmt.Errorf("open %s: %w", d, err))
			return 1
		}
	}
	if err := s.dropPrivileges(port); err != nil {
		s.fail("privileges", err)
		return 1
	}
	fds := dirs[:]
	if lis >= 0 {
		fds = append(fds, lis)
	}
	// The start-up probes, from where the target will stand, answered
	// with ready: one message fewer on the way to the target.
	var probes []ProbeResult
	if s.cfg.Probe != nil {
		probes = s.probes(s.cfg.Probe)
	}
	if err := s.c.Send(Message{Kind: MsgReady, Port: port, Receipt: s.receipt, Probes: probes}, fds...); err != nil {
		return 1
	}
	CloseAll(fds)
	// The descriptor check is made while the init waits for the parent
	// (which is busy with its proxy and audit log, or asks for the probes
	// first); the target waits for it and for the signal set-up.
	fw := <-fwc
	prep := make(chan error, 1)
	go func() { prep <- checkFDs() }()
	if s.cfg.Session {
		if err := <-prep; err != nil {
			s.fail("fds", err)
			return 1
		}
		return s.serveSession(port, fw)
	}
	return s.serve(target{
		path: s.cfg.Path, argv: s.cfg.Args, env: proxyEnv(s.cfg.Env, port, ""), dir: s.cfg.Dir,
	}, fw, prep)
}

// serve answers probes until the parent releases the target, then runs it
// once prep has passed, with the streams that came with the release.
func (s *initState) serve(t target, fw *forwarder, prep <-chan error) int {
	for {
		m, fds, err := s.c.Recv()
		if err != nil {
			return 1 // the parent is gone or broke the protocol: run nothing
		}
		if m.Kind != MsgRelease {
			CloseAll(fds)
		}
		switch m.Kind {
		case MsgProbe:
			res := s.probes(m.Probe)
			if err := s.c.Send(Message{Kind: MsgProbed, Probes: res}); err != nil {
				return 1
			}
		case MsgRelease:
			// The target's stdin, stdout and stderr come with release:
			// the init's own streams are its diagnostics' alone.
			if len(fds) != 3 {
				CloseAll(fds)
				s.fail("protocol", errors.New("release without the target's three streams"))
				return 1
			}
			if err := <-prep; err != nil {
				s.fail("fds", err)
				return 1
			}
			t.stdio = [3]int{fds[0], fds[1], fds[2]}
			return s.runTarget(t, fw)
		default:
			s.fail("protocol", fmt.Errorf("unexpected %q message", m.Kind))
			return 1
		}
	}
}

// fail reports a setup failure to the parent; the init then exits and
// the kernel tears the namespaces down.
func (s *initState) fail(stage string, err error) {
	s.c.Send(Message{Kind: MsgFailed, Stage: stage, Error: err.Error()})
}

// readConfig reads the length-prefixed JSON config from the setup pipe.
func (s *initState) readConfig(r io.Reader) error {
	var n uint32
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return fmt.Errorf("read config length: %w", err)
	}
	if n > maxSetupCfg {
		return fmt.Errorf("config of %d bytes exceeds %d", n, maxSetupCfg)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	if err := json.Unmarshal(b, &s.cfg); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	return nil
}

// sanitizeFDs makes sure nothing but stdio, the control socket and the
// setup pipe came in: any other descriptor (one leaked into airlock by
// its own caller without close-on-exec) is closed, and every descriptor
// above stdio is marked close-on-exec so the target inherits none of them.
func sanitizeFDs() error {
	dir, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	names, err := dir.Readdirnames(-1)
	dirFD := int(dir.Fd())
	if err != nil {
		dir.Close()
		return fmt.Errorf("list descriptors: %w", err)
	}
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd <= 2 || fd == dirFD {
			continue
		}
		if fd == fdCtrl || fd == fdSetup || (fd == fdRoot && hasRootFD()) || fd == selfFD() || isRuntimeFD(fd) {
			unix.CloseOnExec(fd)
			continue
		}
		unix.Close(fd)
	}
	return dir.Close()
}

// privateProc makes the init's mount namespace private (nothing it mounts
// reaches the host's, whatever the propagation it was copied with) and
// mounts the /proc of its own pid namespace over the host's: psx, which
// runs a call on every thread, finds the threads in /proc/<getpid()>/task,
// and getpid() is 1 here. Where the host refuses a fresh /proc (a
// container), it keeps the host's if it may (useHostProc) and says so.
func privateProc() (hostProc bool, err error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return false, fmt.Errorf("make / private: %w", err)
	}
	err = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if procRefused(err) {
		if herr := useHostProc(); herr != nil {
			return false, fmt.Errorf("mount the pid namespace's /proc: %w: %w", err, herr)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("mount the pid namespace's /proc: %w", err)
	}
	return false, nil
}

// tasksFDs returns the first of the v1 tasks descriptors the parent
// passed (after fdRoot's place) and how many there are.
func tasksFDs() (first, n int) {
	first = fdRoot
	if hasRootFD() {
		first++
	}
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, TasksArg); ok {
			n = Atoi(v)
		}
	}
	return first, max(n, 0)
}

// commName is the init's name in ps and /proc/PID/comm, whichever file it
// runs from: the kernel names a process after its executable's file,
// "exe" for /proc/self/exe and the descriptor's number for airlock-init
// run by its descriptor, which tells an operator nothing.
const commName = "airlock-init"

// setComm names the init's main thread, before the runtime starts the
// threads that inherit its name.
func setComm() {
	name := []byte(commName + "\x00")
	unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
}

// selfFD is the descriptor of the calling binary the parent passed with
// SelfArg, -1 without one.
func selfFD() int {
	if !slices.Contains(os.Args[1:], SelfArg) {
		return -1
	}
	first, n := tasksFDs()
	return first + n
}

// hasRootFD reports whether the parent passed a Config.Root descriptor at
// fdRoot (it says so with rootArg).
func hasRootFD() bool { return len(os.Args) > 1 && os.Args[1] == RootArg }

// isRuntimeFD reports whether fd is one the Go runtime may have opened
// before Init ran (its epoll and wakeup descriptors).
func isRuntimeFD(fd int) bool {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return false
	}
	return link == "anon_inode:[eventpoll]" || link == "anon_inode:[eventfd]"
}

var errNoSeccomp = errors.New("the kernel has no seccomp filter mode")
