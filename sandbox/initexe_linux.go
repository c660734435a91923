package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
	"github.com/airlock-sandbox/airlock/internal/reexec"
	"github.com/airlock-sandbox/airlock/sandbox/internal/initproc"
	"golang.org/x/sys/unix"
)

// initExe is the program a sandbox's init runs from.
type initExe struct {
	// small is airlock-init, opened once and checked; nil: this binary.
	small *os.File
	// self is the calling binary, passed to a small init for BindSelf.
	self *os.File
	// receipt says which it is, and why (the receipt's "init").
	receipt string
}

// The receipts' words for the init.
const (
	initSmall = "airlock-init (small, beside the binary): "
	initSelf  = "airlock itself "
)

// exeDir is the real directory of the running binary and the binary's
// owner, found once.
var exeDir = sync.OnceValues(func() (exeHome, error) {
	exe, err := os.Executable()
	if err != nil {
		return exeHome{}, err
	}
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return exeHome{}, err
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return exeHome{}, err
	}
	return exeHome{path: real, uid: st.Uid, dev: st.Dev, ino: st.Ino}, nil
})

// exeHome is where the running binary lies (its real path), who owns it,
// and which file it is.
type exeHome struct {
	path     string
	uid      uint32
	dev, ino uint64
}

// replaced reports whether the binary's path names another file now than
// the one running (an upgrade installed since this process started: the
// airlock-init beside it is then of the new build, not of this one).
func (h exeHome) replaced() bool {
	var st unix.Stat_t
	return unix.Stat(h.path, &st) != nil || st.Dev != h.dev || st.Ino != h.ino
}

// openSmallInit returns the init to run: airlock-init from the directory
// of the running binary when it is there and trusted (a regular file, not
// a link, executable, owned by root or the binary's owner and writable by
// nobody else, in a directory that nobody else can write either: the rule
// of policy files, hostfile.Trusted), else this binary, with the reason.
func openSmallInit() initExe {
	home, err := exeDir()
	if err != nil {
		return initExe{receipt: initSelf + "(its own path is unknown: " + err.Error() + ")"}
	}
	if home.replaced() {
		return initExe{receipt: initSelf + "(its binary was replaced or removed since it started: the " + SmallInit + " beside it would be of that other build)"}
	}
	path := filepath.Join(filepath.Dir(home.path), SmallInit)
	f, fi, err := hostfile.OpenNoFollow(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return initExe{receipt: initSelf + "(no " + SmallInit + " beside it)"}
	case err != nil:
		return refusedInit(err)
	case fi.Mode().Perm()&0o111 == 0:
		f.Close()
		return refusedInit(fmt.Errorf("%s is not executable", path))
	}
	if _, err := hostfile.Trusted(path, fi, home.uid, "airlock's owner"); err != nil {
		f.Close()
		return refusedInit(fmt.Errorf("%s: %w", path, err))
	}
	return initExe{small: f, receipt: initSmall + path}
}

func refusedInit(err error) initExe {
	return initExe{receipt: initSelf + "(" + SmallInit + " beside it refused: " + err.Error() + ")"}
}

// chooseInit sets s.init for a start: the small init unless a test hole
// needs this binary (Init; only a test binary honours one). With BindSelf
// the small init is passed this binary to copy in.
func (s *Sandbox) chooseInit() error {
	if s.hole != nil {
		s.init = initExe{receipt: initSelf + "(a test hole needs the test binary)"}
		return nil
	}
	s.init = openSmallInit()
	if s.init.small == nil || !bindsSelf(s.cfg.Binds) {
		return nil
	}
	f, err := os.Open(initproc.SelfExe)
	if err != nil {
		s.init.close()
		return fmt.Errorf("sandbox: open own binary for BindSelf: %w", err)
	}
	s.init.self = f
	return nil
}

func bindsSelf(binds []Bind) bool {
	for _, b := range binds {
		if b.Host == initproc.SelfExe {
			return true
		}
	}
	return false
}

// files are the init's descriptors after the tasks files: the calling
// binary (with BindSelf), then the small init itself, which it is run
// from by its descriptor there (never by path: what was checked is what
// runs).
func (e *initExe) files() []*os.File {
	var out []*os.File
	if e.self != nil {
		out = append(out, e.self)
	}
	if e.small != nil {
		out = append(out, e.small)
	}
	return out
}

// path is what the init is executed as, given its descriptors extra
// (ending with files()): the small init's descriptor in the child, after
// exec.Cmd has moved them to 3 and up, else this binary.
func (e *initExe) path(extra int) string {
	if e.small == nil {
		return initproc.SelfExe
	}
	return "/proc/self/fd/" + strconv.Itoa(3+extra-1)
}

func (e *initExe) close() {
	for _, f := range e.files() {
		f.Close()
	}
	e.small, e.self = nil, nil
}

// diedInSetup is the error of an init that died before it sent want
// (recvErr): a small init of another build says so with its exit status,
// which fails the start with ErrOtherBuild.
func (s *Sandbox) diedInSetup(recvErr error, setupErr <-chan error) error {
	status, ws, ok := s.zombieStatus()
	if ok && s.init.small != nil && ws.Exited() && ws.ExitStatus() == initproc.ExitOtherBuild {
		return fmt.Errorf("sandbox: %w", ErrOtherBuild)
	}
	if serr := <-setupErr; serr != nil {
		return fmt.Errorf("sandbox: %w", serr)
	}
	return fmt.Errorf("sandbox: the init died during setup: %w%s%s", recvErr, status, s.initOut.said())
}

// InitProgram says which program a sandbox started now by this binary
// would run as its init, and why, as the run receipt's "init" does; for
// airlock-init it also runs it once to check its build (airlock doctor).
func InitProgram(ctx context.Context) string {
	e := openSmallInit()
	if e.small == nil {
		return e.receipt
	}
	defer e.close()
	cmd := exec.CommandContext(ctx, e.path(1))
	cmd.Args = []string{initproc.CheckArg0}
	cmd.ExtraFiles = []*os.File{e.small}
	cmd.Env = []string{reexec.Mark(initproc.CheckArg0), initproc.EnvBuild + "=" + initproc.Build()}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return e.receipt + ", of this build"
	case errors.As(err, &ee) && ee.ExitCode() == initproc.ExitOtherBuild:
		return "none: runs fail: " + ErrOtherBuild.Error()
	default:
		return initSelf + "(" + SmallInit + " beside it could not be checked: " + err.Error() + "; runs will try it)"
	}
}
