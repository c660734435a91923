package monitor

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/internal/testutil"
)

// TestAlertAfterFailedAppend fills the disk under the third of three
// command denials: its append fails, alert and all. The monitor had
// counted it, raised the alert and started counting again; it is reset
// and shown the file again, so that the next denial, the third one in the
// file, raises the alert. Before, the alert was lost.
func TestAlertAfterFailedAppend(t *testing.T) {
	dir := testutil.SmallTmpfs(t, 64<<10)
	path := filepath.Join(dir, "audit.jsonl")
	th := Thresholds{CommandDenyRepeat: 3, Window: time.Hour}
	r, err := openRecorder(path, th, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []string{"git", "curl"} {
		if _, alerts, err := r.Record(commandDeny(c)); err != nil || len(alerts) != 0 {
			t.Fatalf("record %s: %v, %d alerts", c, err, len(alerts))
		}
	}
	free := testutil.FillDisk(t, dir, func() error {
		_, _, err := r.log.AppendAll(audit.Event{Kind: audit.KindLifecycle, Decision: audit.DecisionInfo, Reason: "filler"})
		return err
	})
	if _, _, err := r.Record(commandDeny("wget")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("record on a full disk: %v", err)
	}
	free()
	_, alerts, err := r.Record(commandDeny("nc"))
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 1 || alerts[0].Context.Alert != RuleCommandDenyRepeat {
		t.Fatalf("alerts after the failed append: %+v; want %s", alerts, RuleCommandDenyRepeat)
	}
}
