package holder

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/changes"
	"github.com/airlock-sandbox/airlock/enforcer"
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

// TestManifestParts: a manifest of some 20 MB, of long entries a
// tree can list, goes in frames within the limit and comes back whole; a
// part too many or too few is an error.
func TestManifestParts(t *testing.T) {
	long := strings.Repeat("\x01\xff/", 4000) // escaped in JSON, base64 when not UTF-8
	var files []changes.FileChange
	for i := range 260 {
		files = append(files, changes.FileChange{Path: fmt.Sprint(long, i), OldPath: long, Kind: changes.Renamed,
			Omitted: "it needs " + changes.QuotePath(long) + " of the original removed"})
	}
	a, b := pair(t)
	defer b.Close()
	go func() {
		writeManifest(a, files)
		a.Close()
	}()
	got, err := readManifest(b, len(files))
	if err != nil || !reflect.DeepEqual(got, files) {
		t.Fatalf("readManifest: %d files, %v", len(got), err)
	}

	// Each frame is within the limit.
	a, b = pair(t)
	defer b.Close()
	go func() {
		writeManifest(a, files)
		a.Close()
	}()
	frames, n := 0, 0
	for {
		var head [4]byte
		if _, err := io.ReadFull(b, head[:]); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		size := binary.BigEndian.Uint32(head[:])
		if size > partBytes+1<<20 || size > maxResponse {
			t.Fatalf("a frame of %d bytes", size)
		}
		var part manifestPart
		if err := json.NewDecoder(io.LimitReader(b, int64(size))).Decode(&part); err != nil {
			t.Fatal(err)
		}
		frames, n = frames+1, n+len(part.Files)
	}
	if n != len(files) || frames < 10 {
		t.Errorf("%d files in %d frames", n, frames)
	}

	// An answer and its part in one burst: reading the answer takes no
	// byte of the part (it took them, and failed).
	a, b = pair(t)
	small := []changes.FileChange{{Path: "a", Kind: changes.Added}}
	if err := writeMsg(a, response{ManifestFiles: 1, Changes: &enforcer.Changes{}}); err != nil {
		t.Fatal(err)
	}
	if err := writeManifest(a, small); err != nil {
		t.Fatal(err)
	}
	var resp response
	if _, err := readMsg(b, &resp, maxResponse); err != nil || resp.ManifestFiles != 1 {
		t.Fatalf("readMsg: %+v %v", resp, err)
	}
	if got, err := readManifest(b, 1); err != nil || !reflect.DeepEqual(got, small) {
		t.Fatalf("readManifest after the answer: %v %v", got, err)
	}
	a.Close()
	b.Close()

	// A manifest shorter or longer than announced.
	few := files[:3]
	for _, announced := range []int{len(few) + 1, len(few) - 1} {
		a, b := pair(t)
		go func() {
			writeManifest(a, few)
			a.Close()
		}()
		if _, err := readManifest(b, announced); err == nil {
			t.Errorf("%d files read as %d", len(few), announced)
		}
		b.Close()
	}
}

// TestStopAnswerLost: a stop whose holder hangs up without an answer and
// is gone since says that the answer was lost, its session gone (it said
// "the holder did not answer", which the command line took for nothing
// stopped); one whose holder is still there says only that it did not
// answer.
func TestStopAnswerLost(t *testing.T) {
	for _, gone := range []bool{true, false} {
		dir, id := t.TempDir(), enforcer.NewSessionID()
		lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: socketPath(dir, id), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := lis.AcceptUnix()
			if err != nil {
				return
			}
			files, _ := readMsg(c, &request{}, maxRequest)
			closeFiles(files)
			if gone {
				lis.Close()
			}
			c.Close()
		}()
		c, err := Dial(dir, id)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = c.Stop(nil, nil)
		if err == nil || errors.Is(err, ErrAnswerLost) != gone || errors.Is(err, ErrNoSession) {
			t.Errorf("holder gone %v: Stop: %v", gone, err)
		}
		lis.Close()
	}
}
