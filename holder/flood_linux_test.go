package holder_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestHolderFloodedWithClients: connections that send nothing, or a
// header that claims 4 MiB and no body, or garbage, hold none of the
// holder's descriptors past its bound (each held one, for ever: enough of
// them and its accept loop, failing, ended for good), and a client that
// asks properly is still answered.
func TestHolderFloodedWithClients(t *testing.T) {
	testutil.RequireRoot(t)
	dir, _, info := newSession(t)
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	var header [4]byte
	binary.BigEndian.PutUint32(header[:], 4<<20-1)
	for i := range 300 {
		c, err := net.Dial("unix", info.Socket)
		if err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 1:
			c.Write(header[:])
		case 2:
			c.Write([]byte("\x00\x00\x00\x05{{{{{"))
		}
		flood = append(flood, c)
	}
	time.Sleep(200 * time.Millisecond)
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(info.Pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	if len(fds) > 150 {
		t.Errorf("the holder holds %d descriptors with 300 idle clients", len(fds))
	}
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	c, err := holder.Dial(dir, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if res, err := execStep(t, c, sh("echo still here", &out)); err != nil || res.ExitCode != 0 || out.String() != "still here\n" {
		t.Fatalf("after the flood: %+v %v %q", res, err, out.String())
	}
}

// TestHolderBlockingPipes: a client of its own making that passes pipes
// in blocking mode (os.Pipe's are not) and never writes to the step's
// stdin nor closes it leaves no thread of the holder's behind: before,
// each step left one blocked in read(2) on that pipe for as long as the
// client kept it open, and enough of them reach the Go runtime's limit,
// which ends the holder and its session.
func TestHolderBlockingPipes(t *testing.T) {
	testutil.RequireRoot(t)
	_, _, info := newSession(t)
	pipe := func() (r, w *os.File) {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	}
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	threads := func() int {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(info.Pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Threads:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
		t.Fatal("no Threads line")
		return 0
	}
	step := func() {
		conn, err := net.Dial("unix", info.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		inR, inW := pipe()
		outR, outW := pipe()
		held = append(held, inW, outR) // never written, never read: the client lives on
		if e, err := holder.RawStep(conn.(*net.UnixConn), info.ID, "true", inR, outW, outW); err != nil || e != "" {
			t.Fatalf("exec: %q %v", e, err)
		}
		inR.Close()
		outW.Close()
	}
	step()
	before := threads()
	for range 30 {
		step()
	}
	time.Sleep(200 * time.Millisecond)
	if after := threads(); after > before+10 {
		t.Errorf("the holder has %d threads after 30 steps whose client keeps a blocking stdin open, %d before", after, before)
	}
}

// TestHolderRefusesOtherDescriptors: a step's streams must be pipes: a
// directory, a socket or /dev/null in their place, or the wrong number of
// them, is refused with the reason, and the session goes on.
func TestHolderRefusesOtherDescriptors(t *testing.T) {
	testutil.RequireRoot(t)
	dir, _, info := newSession(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	d, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, other := os.NewFile(uintptr(sp[0]), "s0"), os.NewFile(uintptr(sp[1]), "s1")
	defer sock.Close()
	defer other.Close()
	for _, c := range []struct {
		name  string
		files []*os.File
		says  string
	}{
		{"a directory", []*os.File{d, w, w}, "descriptor 0 is not a pipe"},
		{"a socket", []*os.File{r, sock, w}, "descriptor 1 is not a pipe"},
		{"/dev/null", []*os.File{r, w, null}, "descriptor 2 is not a pipe"},
		{"four", []*os.File{r, w, w, w}, "want a step and its three pipes"},
	} {
		conn, err := net.Dial("unix", info.Socket)
		if err != nil {
			t.Fatal(err)
		}
		e, err := holder.RawStep(conn.(*net.UnixConn), info.ID, "echo ran", c.files...)
		conn.Close()
		if err != nil || !strings.Contains(e, c.says) {
			t.Errorf("%s: answer %q, %v; want %q", c.name, e, err, c.says)
		}
	}
	c, err := holder.Dial(dir, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if res, err := execStep(t, c, sh("echo still here", &out)); err != nil || res.ExitCode != 0 || out.String() != "still here\n" {
		t.Fatalf("after: %+v %v %q", res, err, out.String())
	}
}
