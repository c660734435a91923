package holder_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/holder"
	"github.com/airlock-sandbox/airlock/internal/testutil"
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
	if res, err := c.Exec(context.Background(), sh("echo still here", &out)); err != nil || res.ExitCode != 0 || out.String() != "still here\n" {
		t.Fatalf("after the flood: %+v %v %q", res, err, out.String())
	}
}
