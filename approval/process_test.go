package approval

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestMain lets the test binary act as a second process on a store:
// APPROVAL_TEST_REDEEM=DIR makes it redeem, from many goroutines, every id
// named on its stdin's first line once its second line arrives, and print
// the ones it won; APPROVAL_TEST_OPEN=DIR makes it try OpenStore(DIR) and
// DefaultDir and print what happened.
func TestMain(m *testing.M) {
	if dir := os.Getenv("APPROVAL_TEST_REDEEM"); dir != "" {
		os.Exit(redeemChild(dir))
	}
	if dir := os.Getenv("APPROVAL_TEST_OPEN"); dir != "" {
		_, err := OpenStore(dir)
		fmt.Printf("open: %v\n", err)
		d, err := DefaultDir()
		fmt.Printf("default: %s %v\n", d, err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func redeemChild(dir string) int {
	s, err := OpenStore(dir)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	in.Scan()
	ids := strings.Fields(in.Text())
	in.Scan() // the start signal
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		for range 8 {
			wg.Go(func() {
				_, _, err := s.Redeem(id, sample())
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					fmt.Println("won", id)
				case !errors.Is(err, ErrUsed):
					fmt.Println("error:", err)
				}
			})
		}
	}
	wg.Wait()
	return 0
}

// TestConcurrentRedeemProcesses: two processes redeem the same approvals
// at the same moment, from eight goroutines each; every approval is won
// exactly once.
func TestConcurrentRedeemProcesses(t *testing.T) {
	s, err := OpenStore(privateDir(t)) // the real clock, which the children share
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 40 {
		r := mustCreate(t, s, sample())
		approve(t, s, r.ID)
		ids = append(ids, r.ID)
	}
	type child struct {
		cmd *exec.Cmd
		out strings.Builder
		in  interface{ Write([]byte) (int, error) }
	}
	children := make([]*child, 2)
	for i := range children {
		c := &child{cmd: testutil.SelfCommand(t, "APPROVAL_TEST_REDEEM="+s.dir)}
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		stdin, err := c.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(stdin, strings.Join(ids, " "))
		c.in = stdin
		defer stdin.Close()
		children[i] = c
	}
	for _, c := range children {
		c.in.Write([]byte("go\n"))
	}
	wins := map[string]int{}
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, c.out.String())
		}
		for _, line := range strings.Split(c.out.String(), "\n") {
			if id, ok := strings.CutPrefix(line, "won "); ok {
				wins[id]++
			} else if strings.HasPrefix(line, "error:") {
				t.Errorf("child %d: %s", i, line)
			}
		}
	}
	for _, id := range ids {
		if wins[id] != 1 {
			t.Fatalf("%s was redeemed %d times, want once; the children said:\n%s\n%s", id, wins[id], children[0].out.String(), children[1].out.String())
		}
	}
}

func TestDefaultDir(t *testing.T) {
	state := filepath.Join(privateDir(t), "state")
	t.Setenv("XDG_STATE_HOME", state)
	dir, err := DefaultDir()
	if err != nil || dir != filepath.Join(state, "airlock", "approvals") {
		t.Fatalf("DefaultDir = %q, %v", dir, err)
	}
	for _, p := range []string{state, filepath.Join(state, "airlock"), dir} {
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v", p, fi.Mode(), err)
		}
	}
	if again, err := DefaultDir(); err != nil || again != dir {
		t.Fatalf("second DefaultDir = %q, %v", again, err)
	}
	if _, err := OpenStore(dir); err != nil {
		t.Fatal(err)
	}

	t.Setenv("XDG_STATE_HOME", "relative/state")
	home := privateDir(t)
	t.Setenv("HOME", home)
	if dir, err := DefaultDir(); err != nil || dir != filepath.Join(home, ".local", "state", "airlock", "approvals") {
		t.Errorf("with a relative $XDG_STATE_HOME: %q, %v", dir, err)
	}
}

// TestDefaultDirRefuses: every component DefaultDir opens is checked.
func TestDefaultDirRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		setup func(state string)
		want  string
	}{
		"state dir writable by others": {func(state string) { os.Chmod(state, 0o777) }, "writable by others (mode 777)"},
		"airlock a link": {func(state string) {
			real := filepath.Join(state, "elsewhere")
			os.Mkdir(real, 0o700)
			os.Symlink(real, filepath.Join(state, "airlock"))
		}, "airlock is a symbolic link or not a directory"},
		"approvals a link": {func(state string) {
			os.Mkdir(filepath.Join(state, "airlock"), 0o700)
			os.Symlink("/tmp", filepath.Join(state, "airlock", "approvals"))
		}, "approvals is a symbolic link or not a directory"},
		"approvals a file": {func(state string) {
			os.Mkdir(filepath.Join(state, "airlock"), 0o700)
			os.WriteFile(filepath.Join(state, "airlock", "approvals"), nil, 0o600)
		}, "approvals is a symbolic link or not a directory"},
		"airlock writable by others": {func(state string) {
			os.Mkdir(filepath.Join(state, "airlock"), 0o775)
			os.Chmod(filepath.Join(state, "airlock"), 0o775)
		},
			"airlock is open to group or others (mode 775)"},
		"approvals someone else's": {func(state string) {
			p := filepath.Join(state, "airlock", "approvals")
			os.MkdirAll(p, 0o700)
			os.Chown(p, testutil.NobodyID, testutil.NobodyID)
		}, "approvals is owned by uid 65534"},
	} {
		t.Run(name, func(t *testing.T) {
			if strings.Contains(c.want, "owned by") {
				testutil.RequireRoot(t) // to give the directory away
			}
			state := privateDir(t)
			c.setup(state)
			t.Setenv("XDG_STATE_HOME", state)
			if _, err := DefaultDir(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
	// A sticky, world-writable state directory (such as /tmp) is fine:
	// no one else can replace what airlock makes in it.
	state := privateDir(t)
	os.Chmod(state, os.ModeSticky|0o777)
	t.Setenv("XDG_STATE_HOME", state)
	if _, err := DefaultDir(); err != nil {
		t.Errorf("sticky state directory: %v", err)
	}
}

// TestStoreOfAnotherUser: an unprivileged user cannot open root's store,
// and gets a store of its own.
func TestStoreOfAnotherUser(t *testing.T) {
	testutil.RequireRoot(t)
	s, _ := newStore(t)
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t, "APPROVAL_TEST_OPEN="+s.dir))
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+cmd.Dir+"/state")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "open: approval: store "+s.dir) || !strings.Contains(string(out), "default: "+cmd.Dir+"/state/airlock/approvals <nil>") {
		t.Fatalf("as nobody:\n%s", out)
	}
}
