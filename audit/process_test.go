package audit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// The test binary doubles as a writer process: TestMain runs helperMain
// when helperEnv is set, instead of the tests.
const helperEnv = "AIRLOCK_AUDIT_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode, os.Getenv("AIRLOCK_AUDIT_TEST_FILE"), os.Getenv("AIRLOCK_AUDIT_TEST_ID")))
	}
	os.Exit(m.Run())
}

// helperMain is a writer process. Modes:
//   - "append N G": G goroutines each append N events, run id ID-g<i>.
//   - "forever": append until killed, printing "ready" after the first.
//   - "append-then-die": append one event, print its seq, SIGKILL itself.
func helperMain(mode, path, id string) int {
	l, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f := strings.Fields(mode)
	switch f[0] {
	case "append":
		n, _ := strconv.Atoi(f[1])
		g, _ := strconv.Atoi(f[2])
		if err := appendConcurrently(l, id, g, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case "forever":
		for i := 0; ; i++ {
			if _, err := l.Append(denial("run_tests", "git", strconv.Itoa(i))); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if i == 0 {
				fmt.Println("ready")
			}
		}
	case "run-then-die":
		if _, err := l.BeginRun(id); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ev := denial("run_tests", "sh")
		ev.Context.RunID, ev.Decision = id, DecisionAllow
		if _, err := l.Append(ev); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "append-then-die":
		ev, err := l.Append(denial("run_tests", "durable-"+id))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(ev.Seq)
		// Die at once, without closing or exiting: only what Append made
		// durable remains.
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return 0
}

// appendConcurrently has g goroutines each append n events to l.
func appendConcurrently(l *Log, id string, g, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for i := range g {
		wg.Go(func() {
			ev := denial("run_tests", "git")
			ev.Context.RunID = fmt.Sprintf("%s-g%d", id, i)
			for range n {
				if _, err := l.Append(ev); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// helper returns a command that runs the test binary as a writer process.
func helper(t testing.TB, mode, path, id string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "AIRLOCK_AUDIT_TEST_FILE="+path, "AIRLOCK_AUDIT_TEST_ID="+id)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestConcurrentProcessesKeepOneChain has several processes, each with
// several goroutines, and this process append to one file at once.
func TestConcurrentProcessesKeepOneChain(t *testing.T) {
	const procs, goroutines, each = 4, 4, 40
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := helper(t, fmt.Sprintf("append %d %d", each, goroutines), path, fmt.Sprintf("p%d", p))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := appendConcurrently(l, "parent", goroutines, each); err != nil {
		t.Error(err)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer process: %v", err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Verify(f)
	if err != nil {
		t.Fatalf("concurrent writers broke the chain: %v", err)
	}
	total := (procs + 1) * goroutines * each
	if rep.Events != total+1 || rep.HeadSeq != uint64(total+1) {
		t.Fatalf("report %+v, want %d events with seqs 1..%d", rep, total+1, total+1)
	}
	// Every writer's events are all there.
	per := map[string]int{}
	for _, line := range readLines(t, path)[1:] {
		ev, err := ParseLine(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		per[ev.Context.RunID]++
	}
	if len(per) != (procs+1)*goroutines {
		t.Errorf("%d writers seen, want %d", len(per), (procs+1)*goroutines)
	}
	for id, n := range per {
		if n != each {
			t.Errorf("writer %s has %d events, want %d", id, n, each)
		}
	}
}

// TestAppendIsDurableWhenItReturns has a process append an event and die
// by SIGKILL the moment Append returns; the event must be in the file.
func TestAppendIsDurableWhenItReturns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := range 3 {
		id := strconv.Itoa(i)
		out, err := helper(t, "append-then-die", path, id).Output()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("writer did not die by SIGKILL: %v", err)
		}
		seq, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		lines := readLines(t, path)
		if len(lines) != seq || !bytes.Contains(lines[seq-1], []byte(`"command":"durable-`+id+`"`)) {
			t.Fatalf("after the writer died, line %d is not its event (file has %d lines)", seq, len(lines))
		}
	}
	f, _ := os.Open(path)
	defer f.Close()
	if _, err := Verify(f); err != nil {
		t.Fatal(err)
	}
}

// TestKilledWriterLeavesVerifiableLog kills a writer that appends as fast
// as it can; the log must verify, or, if the kill tore a line, verify
// after the next writer's repair.
func TestKilledWriterLeavesVerifiableLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for round := range 5 {
		cmd := helper(t, "forever", path, "w")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(round*7) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		b, _ := os.ReadFile(path)
		if _, err := Verify(bytes.NewReader(b)); err != nil {
			if !strings.Contains(err.Error(), "final line has no newline") {
				t.Fatalf("round %d: a killed writer left %v", round, err)
			}
			t.Logf("round %d: the kill tore a line: %v", round, err)
		}
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(denial("t", "after")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if _, err := Verify(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

// TestAppendAsUnprivilegedUser runs a writer as nobody (65534): the audit
// log needs no privilege.
func TestAppendAsUnprivilegedUser(t *testing.T) {
	cmd := testutil.AsNobody(t, testutil.SelfCommand(t))
	// cmd.Dir is a directory nobody owns.
	path := filepath.Join(cmd.Dir, "state", "airlock", "audit.jsonl")
	cmd.Env = []string{helperEnv + "=append 5 2", "AIRLOCK_AUDIT_TEST_FILE=" + path, "AIRLOCK_AUDIT_TEST_ID=nobody"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writer as nobody: %v\n%s", err, out)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || fi.Mode().Perm() != 0o600 {
		t.Errorf("log owned by %d with mode %v, want 65534 and 0600", st.Uid, fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	rep, err := Verify(bytes.NewReader(b))
	if err != nil || rep.Events != 11 {
		t.Fatalf("log written as nobody: %+v, %v", rep, err)
	}
}
