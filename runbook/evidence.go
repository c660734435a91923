package runbook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/enforcer"
)

// maxAuditEvidence bounds the audit lines copied into the evidence.
const maxAuditEvidence = 64 << 20

// evidenceSummary is summary.json: what fired, how the sandbox was
// frozen, and what each file of the evidence holds.
type evidenceSummary struct {
	RunID    string            `json:"runId"`
	TestID   string            `json:"testId"`
	Time     time.Time         `json:"time"`
	Signals  []Signal          `json:"signals"`
	Freeze   string            `json:"freeze"`
	InitPid  int               `json:"initPid"`
	Files    map[string]string `json:"files"`
	Sandbox  enforcer.Evidence `json:"sandbox"`
	Problems []string          `json:"problems,omitempty"`
}

// evidenceFiles says what each file of the evidence holds.
var evidenceFiles = map[string]string{
	"summary.json":             "this file: the signals, the freeze, and what could not be collected",
	"sandbox/":                 "the sandbox's own snapshot: processes.json, mounts.txt, namespaces.txt, net/, workspace-mtimes.txt, and workspace/ (the workspace copy, kept)",
	"process-tree.json":        "every host process of the sandbox (its init, its descendants, its pid namespace) with cgroups, namespaces and sockets",
	"host-netns.json":          "every network namespace on the host and the pids in it",
	"host-files.json":          "the watched host paths before the plan and now, and what changed",
	"audit-since-launch.jsonl": "the audit log from the sandbox_launched event on, as it was on disk",
}

// hostFilesEvidence is host-files.json.
type hostFilesEvidence struct {
	Before  hostSnapshot `json:"before"`
	After   hostSnapshot `json:"after"`
	Changes []string     `json:"changes"`
}

// writeEvidence collects the evidence of a frozen sandbox into dir. It
// goes on past what cannot be collected, and lists it in summary.json.
func (l *launch) writeEvidence(dir, freeze string) {
	sum := evidenceSummary{RunID: l.opts.RunID, TestID: l.plan.TestID, Time: time.Now().UTC(),
		Signals: l.esc.list(), Freeze: freeze, InitPid: l.sess.Pid(), Files: evidenceFiles}
	note := func(err error) {
		if err != nil {
			sum.Problems = append(sum.Problems, err.Error())
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		note(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		// Without its own directory the evidence would mix with another
		// run's: the event names the failure, and nothing is written.
		l.res.Evidence = ""
		l.res.Error = fmt.Sprintf("runbook: evidence: %v", err)
		return
	}
	ev, err := l.sess.Evidence(filepath.Join(dir, "sandbox"))
	note(err)
	sum.Sandbox = ev
	if l.procs != nil {
		note(writeJSON(dir, "process-tree.json", l.procs.tree()))
	}
	note(writeJSON(dir, "host-netns.json", hostNetNamespaces()))
	after := snapshotHost(l.hostFiles, l.hostTrees, l.unwatched())
	note(writeJSON(dir, "host-files.json", hostFilesEvidence{Before: l.hostBefore, After: after, Changes: l.hostBefore.changes(after)}))
	if l.chain != nil {
		note(l.copyAuditSinceLaunch(filepath.Join(dir, "audit-since-launch.jsonl")))
	}
	note(writeJSON(dir, "summary.json", sum))
}

// copyAuditSinceLaunch copies the audit log from the launch line on.
func (l *launch) copyAuditSinceLaunch(dst string) error {
	f, err := os.Open(l.chain.path)
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(l.chain.offset, io.SeekStart); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	return writeFile(dst, io.LimitReader(f, maxAuditEvidence))
}

// writeJSON writes v, indented, as dir/name.
func writeJSON(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("evidence: %s: %w", name, err)
	}
	return writeFile(filepath.Join(dir, name), bytes.NewReader(append(b, '\n')))
}

// writeFile creates dst, which must not exist (never through a link),
// and copies r into it.
func writeFile(dst string, r io.Reader) error {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("evidence: write %s: %w", dst, err)
	}
	return nil
}
