package quick

import (
	"encoding/base64"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"github.com/airlock-sandbox/airlock/holder/rundir"
)

// maxAnswer bounds an answer's frame: the holder answers a command line
// with its status only.
const maxAnswer = 64 << 10

// run hands args, the command line after "session exec", to the holder of
// the session args[0] names and relays its streams; ok is false when the
// holder could not be asked or did not take it, and nothing has run then.
// The holder is found and checked as holder.Dial and its client do
// (holder/client_linux.go): a socket in this user's runtime directory,
// owned by this user, served by this user (SO_PEERCRED).
func run(args []string) (code int, ok bool) {
	stdin, stdout, stderr := os.Stdin, os.Stdout, os.Stderr
	uid := os.Geteuid()
	dir := rundir.Path(uid)
	if !validID(args[0]) || rundir.Why(dir, uid) != "" {
		return 0, false
	}
	sock := dir + "/" + args[0] + ".sock"
	var st syscall.Stat_t
	if syscall.Lstat(sock, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK || int(st.Uid) != uid {
		return 0, false
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	conn := os.NewFile(uintptr(fd), "airlock-holder")
	defer conn.Close()
	if syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}) != nil {
		return 0, false
	}
	if cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED); err != nil || int(cred.Uid) != uid {
		return 0, false
	}
	var p [3][2]*os.File // stdin, stdout, stderr: [the holder's end, ours]
	for i := range p {
		r, w, err := os.Pipe()
		if err != nil {
			return 0, false
		}
		if i == 0 {
			p[i] = [2]*os.File{r, w}
		} else {
			p[i] = [2]*os.File{w, r}
		}
	}
	defer func() {
		for _, e := range p {
			e[0].Close()
			e[1].Close()
		}
	}()
	if !send(fd, args, [3]int{int(p[0][0].Fd()), int(p[1][0].Fd()), int(p[2][0].Fd())}) {
		return 0, false
	}
	for _, e := range p {
		e[0].Close() // the holder has its own copies
	}
	// Ctrl-C: hang up our side, and the holder interrupts the step at
	// once; SIGTERM: say so first, and the step gets SIGTERM and the
	// command line's --stop-timeout to end. The holder answers either way.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if <-sigs == syscall.SIGTERM {
			syscall.Write(fd, terminateFrame)
		}
		syscall.Shutdown(fd, syscall.SHUT_WR)
	}()
	var out sync.WaitGroup
	for i, w := range []*os.File{stdout, stderr} {
		out.Go(func() { io.Copy(w, p[i+1][1]) })
	}
	// The first answer says whether the holder took the command line;
	// until then stdin is left unread, for the full command line.
	if a, ok := readFrame(conn); !ok || a != `{"accepted":true}` {
		// Left to the full command line: its own signal handling from
		// now on (Stop costs a round trip between two threads, and is
		// not needed on the way to exit).
		signal.Stop(sigs)
		return 0, false
	}
	go func() {
		io.Copy(p[0][1], stdin)
		p[0][1].Close()
	}()
	a, ok := readFrame(conn)
	code, err = strconv.Atoi(after(a, `"exitCode":`, "}"))
	if !ok || err != nil {
		stderr.WriteString("airlock: session exec: the holder ended before it answered\n")
		return 125, true
	}
	out.Wait() // the holder closed its ends before it answered
	return code, true
}

// terminateFrame is an opTerminate request frame (holder/wire.go): its
// length, then its JSON.
var terminateFrame = append([]byte{0, 0, 0, byte(len(terminateJSON))}, terminateJSON...)

const terminateJSON = `{"op":"terminate"}`

// send writes the command line (holder/wire.go's cliRequest, in an
// opCLI request frame: a 4-byte big-endian length, then JSON) with the
// three pipes' ends attached.
func send(fd int, args []string, fds [3]int) bool {
	cwd, _ := syscall.Getwd()
	b := []byte{0, 0, 0, 0} // the length, below
	b = append(b, `{"op":"cli","cli":{"args":`...)
	b = list(b, args)
	b = append(b, `,"env":`...)
	b = list(b, os.Environ())
	b = append(b, `,"dir":"`+base64.StdEncoding.EncodeToString([]byte(cwd))+`"}}`...)
	size := len(b) - 4
	b[0], b[1], b[2], b[3] = byte(size>>24), byte(size>>16), byte(size>>8), byte(size)
	frame := b
	n, err := syscall.SendmsgN(fd, frame, syscall.UnixRights(fds[:]...), nil, 0)
	for err == nil && n < len(frame) {
		var m int
		m, err = syscall.Write(fd, frame[n:])
		n += m
	}
	return err == nil
}

// list appends ss as a JSON array of base64 strings ([]byte's encoding).
func list(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, []byte(s))
		b = append(b, '"')
	}
	return append(b, ']')
}

// after returns what s holds between the first from and the next to
// after it, "" when there is none. (Not package strings, which Go
// initialises late: see the package doc.)
func after(s, from, to string) string {
	for i := 0; i+len(from) <= len(s); i++ {
		if s[i:i+len(from)] != from {
			continue
		}
		rest := s[i+len(from):]
		for j := 0; j+len(to) <= len(rest); j++ {
			if rest[j:j+len(to)] == to {
				return rest[:j]
			}
		}
		return ""
	}
	return ""
}

// readFrame reads one answer frame.
func readFrame(r io.Reader) (string, bool) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", false
	}
	size := uint32(n[0])<<24 | uint32(n[1])<<16 | uint32(n[2])<<8 | uint32(n[3])
	if size > maxAnswer {
		return "", false
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", false
	}
	return string(b), true
}

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
