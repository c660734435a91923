//go:build unix

package macbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/internal/reexec"
	"github.com/airlock-sandbox/airlock/limits"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"github.com/airlock-sandbox/airlock/sandbox/internal/launch"
	"github.com/airlock-sandbox/airlock/sandbox/seatbelt"
)

// Poll is how often the watch reads the process table; the disk is read
// every diskEvery polls.
const (
	Poll      = 100 * time.Millisecond
	diskEvery = 5
)

// ErrStart is matched by Start's error when the command could not be
// started (the launcher failed before executing it).
var ErrStart = errors.New("the command could not start")

// Caps are one command's own caps; disk and open files are the box's.
type Caps struct {
	Wall, CPU          time.Duration
	MemoryBytes, Tasks int64
}

// Command is one command to run in the box. Path, Dir and the values of
// Env are as the command names them (Inside maps them).
type Command struct {
	Path string
	// Tree, when set (WorkspaceDir or TmpDir, as the command names it),
	// makes Path a workspace program: its real path must lie in Tree and
	// be an executable file, which is what runs.
	Tree string
	Args []string
	Env  []string
	Dir  string
	// Stdin, Stdout and Stderr go through os/exec's pipes: the command
	// never gets airlock's own descriptors.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Caps           Caps
	// name names the command's profile file; host says that Path is a
	// host path already (the probes' airlock binary).
	name string
	host bool
}

// Outcome is how a command ended.
type Outcome struct {
	ExitCode, Signal int
	// KilledBy names the cap that killed it ("" for none).
	KilledBy limits.KilledBy
	Wall     time.Duration
	// CPU is the user and system time of the command and of the
	// processes it waited for.
	CPU time.Duration
	// PeakMemoryBytes is the largest footprint of the tree the watch saw.
	PeakMemoryBytes int64
	// Survivors are processes of the tree still alive after every kill:
	// the watch could not end them (docs/sandbox.md, "macOS").
	Survivors []int
}

// Run is one command started in the box.
type Run struct {
	b        *Box
	cmd      *exec.Cmd
	caps     Caps
	started  time.Time
	tree     *seatbelt.Tree
	treeMu   sync.Mutex // the tree, read by the watch and by kills
	killedBy atomic.Pointer[limits.KilledBy]
	peak     atomic.Int64
	reaped   atomic.Bool
	stop     chan struct{}
	watched  chan struct{}
	// Rlimits and Notes are the command's rlimit plan, for the receipt.
	Rlimits []seatbelt.Rlimit
	Notes   map[string]string
	// Program is the host path of the file that runs.
	Program string
}

// Start starts c under its profile and rlimits, in a session of its own
// (no controlling terminal), and watches it: wall clock, the tree's
// footprint and processes every Poll, the copies' size.
func (b *Box) Start(c Command) (*Run, error) {
	if c.name == "" {
		c.name = "command"
	}
	dir := c.Dir
	if dir == "" {
		dir = WorkspaceDir
	}
	program := c.Path
	if !c.host {
		program = b.Inside(c.Path)
	}
	if c.Tree != "" {
		p, err := inTree(program, b.Inside(c.Tree))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStart, err)
		}
		program = p
	}
	profile, err := b.profile(c.name, program)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	caps := b.cfg.Caps
	caps.CPU, caps.Tasks = c.Caps.CPU, c.Caps.Tasks
	rl, notes := seatbelt.Rlimits(caps, b.cfg.Platform.Limits())
	args := append([]string{program}, c.Args[min(1, len(c.Args)):]...)
	conf := launch.Config{
		Argv:    b.cfg.Platform.Wrap(profile, args),
		Env:     initproc.ProxyEnv(b.Env(c.Env), b.cfg.ProxyPort, b.cfg.ProxyAuth),
		Dir:     b.Inside(dir),
		Rlimits: rl,
	}
	r := &Run{b: b, caps: c.Caps, stop: make(chan struct{}), watched: make(chan struct{}), Rlimits: rl, Notes: notes, Program: program}
	if err := r.launch(conf, c); err != nil {
		return nil, err
	}
	r.tree = seatbelt.NewTree(r.cmd.Process.Pid)
	go r.watch()
	return r, nil
}

// launch starts the launcher and hands it conf; it returns once the
// launcher has executed the wrapped command, or failed.
func (r *Run) launch(conf launch.Config, c Command) error {
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer cfgR.Close()
	defer cfgW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer errR.Close()
	cmd := &exec.Cmd{
		Path: r.b.cfg.Platform.Self, Args: []string{launch.LaunchArg0},
		Env:   []string{reexec.Mark(launch.LaunchArg0)},
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr,
		ExtraFiles:  []*os.File{cfgR, errW}, // descriptors 3 and 4
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		// The copies of stdout and stderr end this long after the
		// command even while a process outside the tree holds them.
		WaitDelay: time.Second,
	}
	err = cmd.Start()
	errW.Close()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	r.cmd, r.started = cmd, time.Now()
	b, _ := json.Marshal(conf)
	go func() {
		cfgW.Write(b)
		cfgW.Close()
	}()
	msg, _ := io.ReadAll(io.LimitReader(errR, 4096))
	if len(msg) > 0 {
		cmd.Wait()
		return fmt.Errorf("%w: %s", ErrStart, msg)
	}
	return nil
}

// watch enforces the caps until stop.
func (r *Run) watch() {
	defer close(r.watched)
	wall := time.NewTimer(r.caps.Wall)
	defer wall.Stop()
	tick := time.NewTicker(Poll)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-r.stop:
			return
		case <-wall.C:
			r.Kill(limits.KilledByWall)
		case <-tick.C:
			tree, err := r.update()
			if err != nil {
				continue
			}
			if k := seatbelt.Over(tree, r.caps.MemoryBytes, r.caps.Tasks); k != "" {
				r.Kill(k)
			}
			if n%diskEvery == 0 {
				used, err := seatbelt.DiskUsage([]string{r.b.Workspace, r.b.Tmp, r.b.Findings}, r.b.entries)
				if err != nil || used > r.b.cfg.Caps.DiskWriteBytes {
					r.Kill(limits.KilledByDisk)
				}
			}
		}
	}
}

// update reads the process table and returns the tree's processes,
// keeping the peak footprint.
func (r *Run) update() ([]seatbelt.Proc, error) {
	procs, err := r.b.cfg.Platform.Procs()
	if err != nil {
		return nil, err
	}
	r.treeMu.Lock()
	tree := r.tree.Update(procs)
	r.treeMu.Unlock()
	for i := range tree {
		tree[i].Footprint = r.b.cfg.Platform.Footprint(tree[i].Pid)
	}
	if f := seatbelt.Footprint(tree); f > r.peak.Load() {
		r.peak.Store(f)
	}
	return tree, nil
}

// Kill records k as the cap that ended the command (unless one was
// recorded first; "" records nothing) and kills its tree.
func (r *Run) Kill(k limits.KilledBy) {
	if k != "" {
		r.killedBy.CompareAndSwap(nil, &k)
	}
	r.killTree()
}

// Signal sends sig to the command's process group, while its leader is
// not reaped (its id cannot be another's then).
func (r *Run) Signal(sig syscall.Signal) error {
	if r.reaped.Load() {
		return os.ErrProcessDone
	}
	return syscall.Kill(-r.cmd.Process.Pid, sig)
}

// killTree sends SIGKILL to the process group (while its leader is not
// reaped) and to every process of the tree as the process table shows
// it now.
func (r *Run) killTree() []seatbelt.Proc {
	if !r.reaped.Load() {
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	}
	tree, err := r.update()
	if err != nil {
		return nil
	}
	for _, p := range tree {
		if p.Pid != r.cmd.Process.Pid || !r.reaped.Load() {
			syscall.Kill(p.Pid, syscall.SIGKILL)
		}
	}
	return tree
}

// Wait waits for the command, kills every process it left, and returns
// how it ended.
func (r *Run) Wait() Outcome {
	werr := r.cmd.Wait()
	r.reaped.Store(true)
	close(r.stop)
	<-r.watched
	o := Outcome{ExitCode: -1, Wall: time.Since(r.started)}
	if st := r.cmd.ProcessState; st != nil {
		o.CPU = st.UserTime() + st.SystemTime()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Exited():
				o.ExitCode = ws.ExitStatus()
			case ws.Signaled():
				o.Signal = int(ws.Signal())
			}
		}
	} else if werr != nil {
		o.Signal = int(syscall.SIGKILL)
	}
	// What the command left behind: killed until none is left, or a
	// second has passed.
	for i := 0; i < 20; i++ {
		left := r.killTree()
		if len(left) == 0 {
			break
		}
		if i == 19 {
			for _, p := range left {
				o.Survivors = append(o.Survivors, p.Pid)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	o.PeakMemoryBytes = r.peak.Load()
	if k := r.killedBy.Load(); k != nil {
		o.KilledBy = *k
	} else {
		o.KilledBy = limits.SignalCause(syscall.Signal(o.Signal), o.CPU, r.caps.CPU)
	}
	return o
}

// Pid is the command's process id (its process group's).
func (r *Run) Pid() int { return r.cmd.Process.Pid }

// inTree resolves the workspace program p in tree (host paths): its real
// path, which must lie in tree's and be an executable regular file. The
// commands that could change the tree are dead: the profile then names
// the file found.
func inTree(p, tree string) (string, error) {
	realTree, err := filepath.EvalSymlinks(tree)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(realTree, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s leaves its tree by a link", p)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return real, nil
}
