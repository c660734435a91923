package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/testutil"
	"github.com/airlock-sandbox/airlock/sandbox/findings"
)

// Names, arguments and variables that are not UTF-8 reach the target byte
// for byte: JSON alone, on the way to the init, would turn each of these
// into U+FFFD (and the two names into one).
var (
	rawArgs  = []string{"\xff", "a\xfeb", "\ufffd", "<&>"}
	rawEnv   = "RAW=\xff\xfe"
	rawNames = []string{"n\xff", "n\xfe", "n\ufffd"}
)

// payloadBytes prints, Go-quoted, its arguments, $RAW, its working
// directory and each /workspace entry with its content, then writes
// /findings/ok and /findings/bad\xff.
func payloadBytes(args []string) int {
	fmt.Printf("args %s\n", quoteAll(args))
	fmt.Printf("env %s\n", strconv.Quote(os.Getenv("RAW")))
	wd, _ := os.Getwd()
	fmt.Printf("dir %s\n", strconv.Quote(wd))
	ents, _ := os.ReadDir("/workspace")
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join("/workspace", e.Name()))
		fmt.Printf("file %s %s\n", strconv.Quote(e.Name()), strconv.Quote(string(b)))
	}
	os.WriteFile("/findings/ok", []byte("kept"), 0o644)
	os.WriteFile("/findings/bad\xff", []byte("refused"), 0o644)
	return 0
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, " ")
}

// bytesWorkspace makes a workspace holding rawNames (the subdirectory the
// step runs in included), each file's content its own name.
func bytesWorkspace(t *testing.T) string {
	ws := t.TempDir()
	for _, n := range rawNames {
		if err := os.WriteFile(filepath.Join(ws, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(ws, "d\xff"), 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

// wantBytes checks the payload's output against what was sent.
func wantBytes(t *testing.T, out string) {
	t.Helper()
	want := []string{
		"args " + quoteAll(rawArgs),
		"env " + strconv.Quote(strings.TrimPrefix(rawEnv, "RAW=")),
		"dir " + strconv.Quote("/workspace/d\xff"),
	}
	for _, n := range rawNames {
		want = append(want, "file "+strconv.Quote(n)+" "+strconv.Quote(n))
	}
	for _, w := range want {
		if !slices.Contains(strings.Split(out, "\n"), w) {
			t.Errorf("output lacks %s:\n%s", w, out)
		}
	}
}

// wantFindings checks the copy-out: the UTF-8 name kept, the other
// refused with a reason that says why.
func wantFindings(t *testing.T, findings string, skipped []string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(findings, "ok")); string(b) != "kept" {
		t.Errorf("findings/ok: %q, %v", b, err)
	}
	ents, _ := os.ReadDir(findings)
	if len(ents) != 1 {
		t.Errorf("findings hold %v, want ok alone", ents)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], `"bad\xff"`) || !strings.Contains(skipped[0], "not printable UTF-8") {
		t.Errorf("skipped %q, want bad\\xff refused for its name", skipped)
	}
}

func TestBytesExact(t *testing.T) {
	testutil.RequireRoot(t)
	testBytesExact(t)
}

func testBytesExact(t *testing.T) {
	t.Run("run", func(t *testing.T) {
		cfg := payloadConfig("bytes", rawArgs...)
		cfg.Env = append(cfg.Env, rawEnv)
		cfg.Dir = "/workspace/d\xff"
		cfg.Workspace, cfg.Findings = bytesWorkspace(t), filepath.Join(t.TempDir(), "findings")
		res, out, err := runWait(t, cfg)
		if res.ExitCode != 0 || !errors.Is(err, findings.ErrLost) {
			t.Fatalf("result %+v, %v, output %q; want exit 0 and bad\\xff not kept", res, err, out)
		}
		wantBytes(t, out)
		wantFindings(t, cfg.Findings, res.FindingsSkipped)
	})
	t.Run("session", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "findings")
		ss := startSession(t, Config{Workspace: bytesWorkspace(t), Findings: dir})
		st := payloadStep("bytes", rawArgs...)
		st.Env = append(st.Env, rawEnv)
		st.Dir = "/workspace/d\xff"
		res, out := execOut(t, ss, st)
		if res.ExitCode != 0 {
			t.Fatalf("result %+v, output %q", res, out)
		}
		wantBytes(t, out)
		td, err := ss.Close()
		if !errors.Is(err, findings.ErrLost) {
			t.Fatalf("close: %v, want bad\\xff not kept", err)
		}
		wantFindings(t, dir, td.FindingsSkipped)
	})
}

// TestBytesExactRootless re-runs the byte-exact checks as uid 65534.
func TestBytesExactRootless(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RunTestAsNobody(t, "TestBytesExactRootlessInner", rootlessEnv+"=1")
}

func TestBytesExactRootlessInner(t *testing.T) {
	testutil.RequireNonRoot(t)
	if os.Getenv(rootlessEnv) == "" {
		t.Skip("run by TestBytesExactRootless")
	}
	testMemory = 1 << 44
	testBytesExact(t)
}
