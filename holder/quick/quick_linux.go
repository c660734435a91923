package quick

import (
	"context"
	"errors"
	"os"
	"syscall"

	"github.com/airlock-sandbox/airlock/holder/rundir"
	"github.com/airlock-sandbox/airlock/holder/step"
)

// run parses args, the command line after "session exec", and hands the
// step to the holder of its session (step.Exec); ok is false when it
// could not, and nothing has run then: a command line it cannot read, a
// holder it cannot reach, or one that did not take the step. The holder
// is found and checked as holder.Dial and its client do
// (holder/client.go): a socket in this user's runtime directory,
// owned by this user, served by this user (SO_PEERCRED).
func run(args []string) (code int, ok bool) {
	wd, _ := syscall.Getwd()
	r, err := step.Parse(args, os.LookupEnv, wd)
	if err != nil {
		return 0, false // the full command line says why, or prints the help
	}
	uid := os.Geteuid()
	dir := rundir.Path(uid)
	if !validID(r.Session) || rundir.Why(dir, uid) != "" {
		return 0, false
	}
	sock := dir + "/" + r.Session + ".sock"
	var st syscall.Stat_t
	if syscall.Lstat(sock, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK || int(st.Uid) != uid {
		return 0, false
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	// Connected in blocking mode (a connect waits its turn in a busy
	// holder's backlog), then non-blocking, so that the runtime polls it
	// and a read may have a deadline.
	if syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}) != nil || !servedBy(fd, uid) || syscall.SetNonblock(fd, true) != nil {
		syscall.Close(fd)
		return 0, false
	}
	conn := os.NewFile(uintptr(fd), "airlock-holder")
	defer conn.Close()
	ctx, stop := step.Interruptible(context.Background())
	code, err = step.Exec(ctx, conn, r, os.Stdin, os.Stdout, os.Stderr)
	var notTaken *step.NotTaken
	switch {
	case errors.As(err, &notTaken):
		// Left to the full command line, with its own signal handling
		// (a released signal costs a round trip between two threads,
		// not needed on the way to exit).
		stop()
		return 0, false
	case err != nil:
		// As the full command line says it (step.ErrNoAnswer).
		os.Stderr.WriteString("airlock: setup: error: holder: session " + r.Session + ": " + err.Error() + "\n")
		return exitSetup, true
	}
	return code, true
}

// servedBy reports whether the socket fd's peer runs as uid.
func servedBy(fd, uid int) bool {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	return err == nil && int(cred.Uid) == uid
}

// exitSetup is enforcer.ExitSetup: airlock could not run the command.
const exitSetup = 125

// validID reports whether id may name a session's socket: the characters
// of enforcer.ValidSessionID, so never a path.
func validID(id string) bool {
	if id == "" || len(id) > 48 || id[0] == '.' || id[0] == '-' {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
