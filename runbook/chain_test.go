package runbook

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/audit"
)

// chainFixture is a log with events before a launch, the launch, and
// events after it.
func chainFixture(t *testing.T) (string, *audit.Log, *chainWatch) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	add := func(reason string) audit.Event {
		ev, err := log.Append(audit.Event{Kind: audit.KindCommand, Decision: audit.DecisionAllow, Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	add("before the launch")
	launched, err := log.Append(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: reasonLaunched,
		Context: audit.Context{Event: audit.EventSandboxLaunched}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchChain(path, launched)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.check(); err != nil {
		t.Fatalf("fresh chain: %v", err)
	}
	add("step one")
	add("step two")
	if err := w.check(); err != nil {
		t.Fatalf("grown chain: %v", err)
	}
	add("step three")
	return path, log, w
}

func editFile(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := out.Write(f(b)); err != nil {
		t.Fatal(err)
	}
}

// TestChainWatch breaks the chain after the launch in each way an
// attacker with the log in reach could, and checks each is seen with its
// reason; what happened before the launch, and honest growth and repairs
// after it, are not breaks.
func TestChainWatch(t *testing.T) {
	lines := func(b []byte) [][]byte { return bytes.SplitAfter(b, []byte("\n")) }
	cases := []struct {
		name, want string
		edit       func(t *testing.T, path string, log *audit.Log)
	}{
		{"no change", "", func(*testing.T, string, *audit.Log) {}},
		{"honest growth", "", func(t *testing.T, _ string, log *audit.Log) {
			log.Append(audit.Event{Kind: audit.KindResource, Decision: audit.DecisionInfo, Reason: "later"})
		}},
		{"edit before the launch", "", func(t *testing.T, path string, _ *audit.Log) {
			editFile(t, path, func(b []byte) []byte {
				return bytes.Replace(b, []byte("before the launch"), []byte("before the lAunch"), 1)
			})
		}},
		{"edit the launch line", "were changed, removed, inserted or moved", func(t *testing.T, path string, _ *audit.Log) {
			editFile(t, path, func(b []byte) []byte {
				return bytes.Replace(b, []byte("sandbox launched"), []byte("sandbox lAunched"), 1)
			})
		}},
		{"edit a verified line", "were changed, removed, inserted or moved", func(t *testing.T, path string, _ *audit.Log) {
			editFile(t, path, func(b []byte) []byte { return bytes.Replace(b, []byte("step one"), []byte("step 0ne"), 1) })
		}},
		{"edit a new line", "is damaged and no repair record follows", func(t *testing.T, path string, _ *audit.Log) {
			editFile(t, path, func(b []byte) []byte { return bytes.Replace(b, []byte("step three"), []byte("step thrEE"), 1) })
		}},
		{"remove a verified line", "were changed, removed, inserted or moved", func(t *testing.T, path string, _ *audit.Log) {
			editFile(t, path, func(b []byte) []byte {
				l := lines(b)
				return bytes.Join(append(l[:3:3], l[4:]...), nil)
			})
		}},
		{"remove the last line", "", func(t *testing.T, path string, _ *audit.Log) {
			// Not seen: the line was never verified. The next check of a
			// later line would see the gap (seq); the end of a log is
			// anchored by recording its head (audit verify --head).
			editFile(t, path, func(b []byte) []byte {
				l := lines(b)
				return bytes.Join(l[:len(l)-2], nil)
			})
		}},
		{"cut below the verified part", "the audit log was cut", func(t *testing.T, path string, _ *audit.Log) {
			editFile(t, path, func(b []byte) []byte { return bytes.Join(lines(b)[:2], nil) })
		}},
		{"replace the file", "replaced by another file", func(t *testing.T, path string, _ *audit.Log) {
			b, _ := os.ReadFile(path)
			os.Remove(path)
			os.WriteFile(path, b, 0o600)
		}},
		{"forged line", "does not chain to the one before it", func(t *testing.T, path string, _ *audit.Log) {
			// A well-formed line from another log, appended.
			other := filepath.Join(t.TempDir(), "other.jsonl")
			ol, _ := audit.Open(other)
			for i := range 6 {
				ol.Append(audit.Event{Kind: audit.KindCommand, Decision: audit.DecisionAllow, Reason: fmt.Sprint("forged ", i)})
			}
			ol.Close()
			b, _ := os.ReadFile(other)
			l := lines(b)
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.Write(l[len(l)-2])
			f.Close()
		}},
		{"repaired torn line", "", func(t *testing.T, path string, log *audit.Log) {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"seq":99,"torn`)
			f.Close()
			if _, err := log.Append(audit.Event{Kind: audit.KindResource, Decision: audit.DecisionInfo, Reason: "after the repair"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"torn line in flight", "", func(t *testing.T, path string, _ *audit.Log) {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"seq":99,"torn`)
			f.Close()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, log, w := chainFixture(t)
			c.edit(t, path, log)
			err := w.check()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("check: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("check: %v, want %q", err, c.want)
			}
		})
	}
}
