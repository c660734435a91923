package runbook

import (
	"fmt"
	"io"
	"os"
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

// writeEvidence adds the launch's own files to the evidence of its
// frozen sandbox (enforcer.Suspect), going on past what cannot be
// collected, and lists that in summary.json.
func (l *launch) writeEvidence(f *enforcer.EvidenceFiles) {
	if l.procs != nil {
		f.JSON("process-tree.json", l.procs.tree())
	}
	f.JSON("host-netns.json", hostNetNamespaces())
	after := snapshotHost(l.hostFiles, l.hostTrees, l.unwatched())
	f.JSON("host-files.json", hostFilesEvidence{Before: l.hostBefore, After: after, Changes: l.hostBefore.changes(after)})
	if l.chain != nil {
		f.Note(l.copyAuditSinceLaunch(f))
	}
	f.JSON("summary.json", evidenceSummary{RunID: l.opts.RunID, TestID: l.plan.TestID, Time: time.Now().UTC(),
		Signals: l.esc.list(), Freeze: f.Freeze, InitPid: l.sess.Pid(), Files: evidenceFiles, Sandbox: f.Sandbox, Problems: f.Problems})
}

// copyAuditSinceLaunch copies the audit log from the launch line on.
func (l *launch) copyAuditSinceLaunch(f *enforcer.EvidenceFiles) error {
	log, err := os.Open(l.chain.path)
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	defer log.Close()
	if _, err := log.Seek(l.chain.offset, io.SeekStart); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	f.Copy("audit-since-launch.jsonl", io.LimitReader(log, maxAuditEvidence))
	return nil
}
