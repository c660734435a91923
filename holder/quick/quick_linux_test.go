package quick

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/holder/step"
)

// fakeHolder listens where the quick client looks for session id's holder
// (a private XDG_RUNTIME_DIR of the test's) and answers one connection
// with answer, which gets the decoded request and its descriptors.
func fakeHolder(t *testing.T, id string, answer func(c *net.UnixConn, req map[string]any, fds []*os.File)) {
	t.Helper()
	xdg := t.TempDir()
	if err := os.Chmod(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	dir := filepath.Join(xdg, "airlock")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, id+".sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		c, err := lis.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		buf, oob := make([]byte, 1<<20), make([]byte, unix.CmsgSpace(4*4))
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil || n < 4 {
			t.Errorf("read the request: %v", err)
			return
		}
		size := int(binary.BigEndian.Uint32(buf))
		for n < 4+size {
			m, err := c.Read(buf[n:])
			if err != nil {
				t.Errorf("read the request: %v", err)
				return
			}
			n += m
		}
		var req map[string]any
		if err := json.Unmarshal(buf[4:4+size], &req); err != nil {
			t.Errorf("the request is not JSON: %v: %q", err, buf[4:4+size])
			return
		}
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		var fds []*os.File
		for _, m := range msgs {
			rights, _ := unix.ParseUnixRights(&m)
			for _, fd := range rights {
				fds = append(fds, os.NewFile(uintptr(fd), "fd"))
			}
		}
		answer(c, req, fds)
		for _, f := range fds {
			f.Close()
		}
	}()
}

func frame(c *net.UnixConn, body string) {
	c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	c.Write([]byte(body))
}

// redirect points the process's stdout and stdin at pipes for the test.
func redirect(t *testing.T) (stdout *os.File, stdin *os.File) {
	t.Helper()
	outR, outW, _ := os.Pipe()
	inR, inW, _ := os.Pipe()
	oldOut, oldIn := os.Stdout, os.Stdin
	os.Stdout, os.Stdin = outW, inR
	t.Cleanup(func() {
		os.Stdout, os.Stdin = oldOut, oldIn
		outW.Close()
		inR.Close()
	})
	return outR, inW
}

// answer is one of the holder's answers to a step, as a frame's body.
func answer(a step.Answer) string {
	b, _ := json.Marshal(a)
	return string(b)
}

// TestRunHandsOver hands a step to a holder: the request carries the
// parsed command line byte for byte (one argument is not UTF-8), --env
// NAME's value from the client's environment and --result made absolute
// in its working directory, with three pipes; the holder's output
// reaches stdout, the client's stdin reaches the holder, and the status
// comes back.
func TestRunHandsOver(t *testing.T) {
	const id = "ses-quick1"
	args := []string{id, "--tool", "t", "--env", "QUICK_TEST", "--result", "r.json", "--", "printf", "\xff\xfe"}
	t.Setenv("QUICK_TEST", "v\xff")
	fakeHolder(t, id, func(c *net.UnixConn, req map[string]any, fds []*os.File) {
		raw, _ := json.Marshal(req["step"])
		var r step.Request
		if err := json.Unmarshal(raw, &r); req["op"] != "step" || err != nil || len(fds) != 3 {
			t.Errorf("request %v (%v) with %d descriptors", req, err, len(fds))
			return
		}
		if r.Session != id || r.Tool != "t" || !slices.Equal(r.Argv, []string{"printf", "\xff\xfe"}) {
			t.Errorf("step %+v, want %q", r, args)
		}
		wd, _ := os.Getwd()
		if !slices.Equal(r.Env, []string{"QUICK_TEST=v\xff"}) || r.Result != wd+"/r.json" {
			t.Errorf("environment %q, result %q (want in %q)", r.Env, r.Result, wd)
		}
		frame(c, answer(step.Answer{Accepted: true}))
		in, _ := io.ReadAll(fds[0])
		fds[1].Write([]byte("out:" + string(in)))
		fds[1].Close()
		fds[2].Close()
		frame(c, answer(step.Answer{Accepted: true, ExitCode: 42}))
	})
	out, in := redirect(t)
	in.Write([]byte("typed"))
	in.Close()
	code, ok := run(args)
	os.Stdout.Close()
	got, _ := io.ReadAll(out)
	if !ok || code != 42 || string(got) != "out:typed" {
		t.Fatalf("run: %d %v, stdout %q", code, ok, got)
	}
}

// TestRunFallsBack leaves a command line the holder does not take to the
// full command line, with stdin unread; and one for no live holder.
func TestRunFallsBack(t *testing.T) {
	const id = "ses-quick2"
	fakeHolder(t, id, func(c *net.UnixConn, req map[string]any, fds []*os.File) {
		frame(c, `{"error":"holder: unknown request \"step\""}`) // an older holder's
	})
	_, in := redirect(t)
	in.Write([]byte("keep"))
	in.Close()
	if _, ok := run([]string{id, "--tool", "t", "--", "true"}); ok {
		t.Fatal("a refused command line was not left to the full command line")
	}
	rest, _ := io.ReadAll(os.Stdin)
	if string(rest) != "keep" {
		t.Fatalf("stdin was read: %q left", rest)
	}
	for _, other := range []string{"ses-none", "../../x", "-x", ""} {
		if _, ok := run([]string{other, "--tool", "t", "--", "true"}); ok {
			t.Errorf("run %q: handed over", other)
		}
	}
}

// TestRunHolderGone answers 125 when the holder took the command line and
// hung up before its status.
func TestRunHolderGone(t *testing.T) {
	const id = "ses-quick3"
	fakeHolder(t, id, func(c *net.UnixConn, req map[string]any, fds []*os.File) {
		frame(c, answer(step.Answer{Accepted: true}))
	})
	redirect(t)
	if code, ok := run([]string{id, "--tool", "t", "--", "true"}); !ok || code != 125 {
		t.Fatalf("run: %d %v, want 125 true", code, ok)
	}
}
