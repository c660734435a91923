package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/holder/quick"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// hostile is what an agent or the contained code might put in a name: an
// OSC that sets the window title, a CSI that clears the screen, the 8-bit
// CSI as a byte and as a character, a carriage return, invalid UTF-8 and
// a bidirectional override.
const hostile = "\x1b]0;pwned\a\x1b[2J\x9b31m\u009b\r\xff\u202e"

// TestHostileArguments runs every command with a hostile argument in every
// position (unknown flag and shorthand, positional, every flag's value,
// the tool, the policy and audit paths, the command after --) on a
// terminal, and checks that no control byte, invalid UTF-8 or
// bidirectional character reaches it: cobra's own messages and help, the
// usage errors, the refusal lines and the reports all go through termtext.
func TestHostileArguments(t *testing.T) {
	bin, err := exec.LookPath("airlock") // put on $PATH by testscript.Main
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("AIRLOCK_POLICY", "")
	t.Setenv("AIRLOCK_AUDIT", filepath.Join(dir, "audit.jsonl"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	// A runtime directory of the test's own: a command line that got as
	// far as starting a session or a pool leaves a holder there, which
	// the cleanup stops.
	rt := filepath.Join(dir, "run")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Cleanup(func() { stopHolders(filepath.Join(rt, "airlock")) })
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(`{"testId": "t", "steps": [{"tool": "t", "command": "ls"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := hostile
	cases := [][]string{
		{h}, {"help", h}, {"help", "run", h}, {"__complete", h}, {"__complete", "run", "--to" + h},
		{"run", "--tool", h, "--", "ls"},
		{"run", "--tool", "read_file", "--", "cat" + h},
		{"run", "--tool", "t", "--", h, h},
		{"run", "--tool", "t", "--policy", h, "--", "ls"},
		{"run", "--tool", "t", "--audit", filepath.Join(dir, h), "--", "ls"},
		{"run", "--tool", "t", "--workspace", h, "--", "ls"},
		{"explain", "--tool", h, "--", h},
		{"explain", "--tool", h, "--json", "--", h},
		{"explain", "--task", h, "--host", h},
		{"explain", "--task", "web_search", "--host", h + ".example", "--json"},
		{"policy", "check", h},
		{"policy", "check", "--policy", h},
		{"launch", "--plan", h},
		{"launch", "--plan", plan, "--audit", filepath.Join(dir, "l.jsonl"), "--workspace", h},
		{"proxy", "--task", h, "--listen", h},
		{"audit", h},
		{"audit", "verify", "--head", h},
		{"audit", "alerts", "--policy", h},
		{"image", "verify", h + "@sha256:" + h},
		{"selftest", "--family", h},
		{"payload", h},
	}
	// And every command: an unknown flag and shorthand, a positional
	// argument, and each flag's value after the arguments that get the
	// command past its usage checks.
	base := map[string][]string{
		"run":     {"--tool", "t", "--audit", filepath.Join(dir, "r.jsonl")},
		"explain": {"--tool", "t"},
		"launch":  {"--plan", plan, "--audit", filepath.Join(dir, "l.jsonl")},
		"proxy":   {"--task", "t", "--listen", "no-such-address", "--audit", filepath.Join(dir, "p.jsonl")},
	}
	tail := map[string][]string{"run": {"--", "ls"}, "explain": {"--", "ls"}}
	skipValues := map[string]bool{"demo": true, "selftest": true} // their flags would run the battery
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(cmdPath(c))
		if c != c.Root() {
			cases = append(cases, append(path[:len(path):len(path)], "--x"+h), append(path[:len(path):len(path)], "-"+h),
				append(path[:len(path):len(path)], h))
			if c.Name() != "timeline" && !skipValues[c.Name()] && c.Name() != "payload" {
				c.Flags().VisitAll(func(f *pflag.Flag) {
					if f.Value.Type() == "bool" || f.Name == "help" {
						return
					}
					args := append(append(append([]string{}, path...), base[c.Name()]...), "--"+f.Name, h)
					cases = append(cases, append(args, tail[c.Name()]...))
				})
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	t.Logf("%d command lines", len(cases))
	for _, args := range cases {
		out := onTerminal(t, dir, bin, args...)
		if i := unsafeAt(out); i >= 0 {
			t.Errorf("airlock %q wrote a raw control byte at %d:\n%q", args, i, out)
		}
	}
}

// unsafeAt returns where out holds something that can drive a terminal
// (a control character but new line and tab, invalid UTF-8, a
// bidirectional control), or -1.
func unsafeAt(out []byte) int {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && size == 1,
			unicode.IsControl(r) && r != '\n' && r != '\t',
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return i
		}
		i += size
	}
	return -1
}

// onTerminal runs bin with args, its stdout and stderr on a fresh
// pseudo-terminal (output processing off, so that what airlock wrote is
// what is read), stdin from /dev/null, in dir, and returns what reached
// the terminal.
func onTerminal(t *testing.T, dir, bin string, args ...string) []byte {
	t.Helper()
	master, slave := openPTY(t)
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, slave, slave
	err := cmd.Start()
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		_, _ = io.Copy(&out, master) // ends with EIO once every writer closed the terminal
		close(read)
	}()
	werr := cmd.Wait()
	<-read
	if ctx.Err() != nil {
		t.Fatalf("airlock %q did not finish: %v", args, werr)
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		t.Fatalf("airlock %q: %v", args, werr)
	}
	return out.Bytes()
}

// openPTY opens a pseudo-terminal pair with output processing (OPOST)
// turned off.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err == nil {
		tio.Oflag &^= unix.OPOST
		err = unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio)
	}
	if err != nil {
		m.Close()
		s.Close()
		t.Fatal(err)
	}
	return m, s
}

// TestChildOutputOnTerminal: a child's output reaches a terminal escaped
// (the contained code cannot drive it either) and a pipe byte for byte.
func TestChildOutputOnTerminal(t *testing.T) {
	testutil.RequireRoot(t)
	bin, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.json")
	if err := os.WriteFile(pol, []byte(`{"toolScopes": {"t": {"allow": [{"name": "printf", "command": "printf", "allowExtraArgs": true}]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIRLOCK_AUDIT", filepath.Join(dir, "audit.jsonl"))
	args := []string{"run", "--policy", pol, "--tool", "t", "--", "printf", `\033]0;pwned\007\233 caf\303\251\n`}
	if got, want := string(onTerminal(t, dir, bin, args...)), `\x1b]0;pwned\a\x9b café`+"\n"; got != want {
		t.Errorf("on a terminal: %q, want %q", got, want)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if got, err := cmd.Output(); err != nil || string(got) != "\x1b]0;pwned\a\x9b café\n" {
		t.Errorf("through a pipe: %q, %v; want the bytes as written", got, err)
	}

	// A session's step, from the quick client and from the full command
	// line: the holder escapes it for the client's terminal too (the quick
	// client's step reached the terminal raw).
	rt := filepath.Join(dir, "run")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Cleanup(func() { stopHolders(filepath.Join(rt, "airlock")) })
	id, err := exec.Command(bin, "session", "start", "--policy", pol).Output()
	if err != nil {
		t.Fatal(err)
	}
	step := []string{"session", "exec", strings.TrimSpace(string(id)), "--tool", "t", "--", "printf", `\033]0;pwned\007\233 caf\303\251\n`}
	for _, full := range []string{"", "1"} {
		t.Setenv(quick.OptOut, full)
		if got, want := string(onTerminal(t, dir, bin, step...)), `\x1b]0;pwned\a\x9b café`+"\n"; got != want {
			t.Errorf("session exec (%s=%s) on a terminal: %q, want %q", quick.OptOut, full, got, want)
		}
		if got, err := exec.Command(bin, step...).Output(); err != nil || string(got) != "\x1b]0;pwned\a\x9b café\n" {
			t.Errorf("session exec (%s=%s) through a pipe: %q, %v; want the bytes as written", quick.OptOut, full, got, err)
		}
	}
}
