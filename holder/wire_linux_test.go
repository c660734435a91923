package holder

import (
	"encoding/binary"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// pair is a connected pair of unix stream sockets.
func pair(t testing.TB) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

func TestMessageRoundTrip(t *testing.T) {
	a, b := pair(t)
	defer a.Close()
	defer b.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := writeMsg(a, request{Op: opExec, Exec: &execRequest{Tool: "t", Command: "c", Args: []string{"a"}}}, r, w, r, w); err != nil {
		t.Fatal(err)
	}
	var got request
	files, err := readMsg(b, &got, maxRequest)
	if err != nil || got.Op != opExec || got.Exec.Command != "c" || len(files) != 4 {
		t.Fatalf("readMsg: %+v %d files, %v", got, len(files), err)
	}
	closeFiles(files)
}

// TestMessageLimits: an oversized frame and too many descriptors are
// refused, and the descriptors that came are closed.
func TestMessageLimits(t *testing.T) {
	a, b := pair(t)
	defer a.Close()
	defer b.Close()
	big := make([]byte, 4)
	binary.BigEndian.PutUint32(big, maxRequest+1)
	a.Write(big)
	if _, err := readMsg(b, &request{}, maxRequest); err == nil {
		t.Error("an oversized frame was accepted")
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	if err := writeMsg(a, request{Op: opInfo}, r, r, r, r, r); err != nil {
		t.Fatal(err)
	}
	if files, err := readMsg(b, &request{}, maxRequest); err == nil || files != nil {
		t.Errorf("five descriptors were accepted: %v", err)
	}
	w.Close()
	// Every copy of the write end is closed: a read sees the end.
	var buf [1]byte
	if n, _ := r.Read(buf[:]); n != 0 {
		t.Error("read from a closed pipe")
	}
}

// FuzzReadMsg: whatever bytes a peer sends, readMsg returns a message or
// an error, and never more than the limit.
func FuzzReadMsg(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x0e{\"op\":\"info\"}"))
	f.Add([]byte("\x00\x00\x00\x02{}trailing"))
	f.Add([]byte("\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := pair(t)
		defer b.Close()
		go func() {
			a.Write(data)
			a.Close()
		}()
		var req request
		files, err := readMsg(b, &req, 1<<16)
		closeFiles(files)
		if err == nil && len(files) != 0 {
			t.Fatal("descriptors from nowhere")
		}
	})
}
