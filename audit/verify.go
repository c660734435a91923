package audit

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"

	"golang.org/x/mod/sumdb/tlog"
)

// Error is a failed verification: the first bad line and why. Line is 0
// for a failure of the file as a whole (a missing head).
type Error struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Error returns "line N: reason", or the reason alone when Line is 0.
func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Reason
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
}

// Repair is a damaged line that a writer closed off with an
// audit_repaired event.
type Repair struct {
	// Line is the damaged line; MarkerLine the repair event after it.
	Line       int `json:"line"`
	MarkerLine int `json:"markerLine"`
	// Bytes is the damaged line's length.
	Bytes int64 `json:"bytes"`
}

// Report describes a verified log (or the part of it read before the
// first bad line).
type Report struct {
	// Lines and Events count the lines read and the valid events in them.
	Lines  int `json:"lines"`
	Events int `json:"events"`
	// ChainID is the log's identity, from its first line.
	ChainID string `json:"chainId,omitempty"`
	// Head and HeadSeq are the hash and seq of the last valid event:
	// record them elsewhere to detect a later cut at the end.
	Head    string `json:"head,omitempty"`
	HeadSeq uint64 `json:"headSeq,omitempty"`
	// Repairs lists the damaged lines that writers closed off.
	Repairs []Repair `json:"repairs,omitempty"`
	// Lossy counts the lines in the legacy form: written by an airlock
	// before the text encoding, with each byte of a string that was not
	// valid UTF-8 replaced by U+FFFD (spelled \ufffd). Their hash and
	// place in the chain hold; those bytes are lost. LossyLines lists the
	// first maxLossyLines of them.
	Lossy      int   `json:"lossy,omitempty"`
	LossyLines []int `json:"lossyLines,omitempty"`
	// TreeSize and TreeRoot are the Merkle tree over the events
	// (docs/audit.md, "Merkle tree"), computed from the lines alone.
	TreeSize int64     `json:"treeSize"`
	TreeRoot tlog.Hash `json:"treeRoot"`
	// Checkpoints are the signed checkpoints found consistent with the
	// log: its first Size events have the checkpoint's root.
	Checkpoints []CheckedCheckpoint `json:"checkpoints,omitempty"`
	// ContinuedFrom is the seq of the first event when the log read
	// starts with a rotated log's continuation (chain_continued): what
	// came before is in earlier files, and is checked only through the
	// tree frontier it carries.
	ContinuedFrom uint64 `json:"continuedFrom,omitempty"`
	// Unhashed counts the events with a command but no argvSha256:
	// written by an airlock before it kept the hash of the whole command
	// line, so a shortened one is not provable from them.
	Unhashed int `json:"unhashed,omitempty"`
}

// CheckedCheckpoint is a signed checkpoint that the log extends.
type CheckedCheckpoint struct {
	Origin string `json:"origin"`
	Size   int64  `json:"size"`
}

// maxLossyLines bounds Report.LossyLines, so that a hostile log cannot
// grow the report with the file.
const maxLossyLines = 100

// damaged is a line that failed ParseLine, waiting for the next line to
// show whether a writer repaired it.
type damaged struct {
	line   int
	bytes  int64
	sum    string
	reason string
}

// Verifier checks a log line by line; ReadAll drives one over a whole
// log (Verify, the OCSF export), and the timeline uses one to check what
// it shows.
type Verifier struct {
	head       string // the anchored head hash, or ""
	headSeen   bool
	tree       *memTree
	cps        []Checkpoint // still to check, by size
	rep        Report
	pending    *damaged
	err        *Error
	prevLineNo int // the line number of the last valid event
	resumed    bool
}

// resumeVerifier returns a Verifier that checks lines following the
// event with the given seq and hash (the tree's catch-up reads from the
// middle of a log).
func resumeVerifier(seq uint64, head, chainID string) *Verifier {
	v := &Verifier{resumed: true}
	v.rep.HeadSeq, v.rep.Head, v.rep.ChainID = seq, head, chainID
	return v
}

// NewVerifier returns a Verifier. When head is not "", End fails unless
// a line with that hash was seen.
func NewVerifier(head string) *Verifier {
	return &Verifier{head: head, tree: newMemTree()}
}

// VerifyOptions are what a log is checked against beyond its own lines.
type VerifyOptions struct {
	// Head, when not "", is a head hash recorded earlier: the log must
	// still hold a line with it, which proves that no line up to it was
	// cut from the end since.
	Head string
	// Checkpoints are signed checkpoints of this log, checked already
	// against their key (ParseCheckpoint): the log must be of their
	// origin's chain and its first Size events must have their root, so
	// that a cut, a rewind or a rewrite of what they cover is caught.
	Checkpoints []Checkpoint
}

// VerifyWith is Verify against opts.
func VerifyWith(r io.Reader, opts VerifyOptions) (Report, error) {
	if opts.Head != "" && !IsHash(opts.Head) {
		return Report{}, errors.New("audit: the head must be a 64-digit lower-case hex hash")
	}
	v := NewVerifier(opts.Head)
	v.cps = slices.SortedFunc(slices.Values(opts.Checkpoints), func(a, b Checkpoint) int { return cmp.Compare(a.Size, b.Size) })
	return v.ReadAll(r, func(Event) error { return nil })
}

// ReadAll checks the whole log r, calling each with every valid event in
// turn, and ends the check at its end. It stops at the first error, of
// the log, of r or of each.
func (v *Verifier) ReadAll(r io.Reader, each func(Event) error) (Report, error) {
	lr := newLineReader(r, MaxLineBytes)
	for {
		line, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			return v.End(line)
		case errors.Is(err, ErrLineTooLong):
			return v.Report(), v.TooLong()
		case err != nil:
			return v.Report(), fmt.Errorf("audit: read: %w", err)
		}
		ev, ok, err := v.Line(line)
		if err == nil && ok {
			err = each(ev)
		}
		if err != nil {
			return v.Report(), err
		}
	}
}

// Verify reads a whole log and checks its chain. It returns a *Error
// naming the first bad line, or another error when r fails.
func Verify(r io.Reader) (Report, error) { return VerifyWith(r, VerifyOptions{}) }

// Report returns what has been verified so far.
func (v *Verifier) Report() Report {
	v.treeReport()
	return v.rep
}

// Line checks the next complete line (without its newline). It returns
// the event and true when the line is a valid event in its place; false
// and no error when the line is damaged and its fate depends on the next
// line; and a *Error, for this or an earlier line, when the log is bad.
// After an error every call returns it again.
func (v *Verifier) Line(line []byte) (Event, bool, error) {
	if v.err != nil {
		return Event{}, false, v.err
	}
	v.rep.Lines++
	n := v.rep.Lines
	ev, legacy, perr := parseLine(line)
	if perr != nil {
		if v.pending != nil {
			return Event{}, false, v.fail(v.pending.line, v.pending.reason)
		}
		sum := sha256.Sum256(line)
		v.pending = &damaged{line: n, bytes: int64(len(line)), sum: hex.EncodeToString(sum[:]), reason: perr.Error()}
		return Event{}, false, nil
	}
	if err := v.repairs(n, &ev); err != nil {
		return Event{}, false, err
	}
	if err := v.chain(n, &ev); err != nil {
		return Event{}, false, err
	}
	v.rep.Events++
	v.rep.Head, v.rep.HeadSeq = ev.Hash, ev.Seq
	if err := v.leaf(n, line, &ev); err != nil {
		return Event{}, false, err
	}
	if (ev.Context.Command != "" || len(ev.Context.Args) > 0) && ev.Context.ArgvSHA256 == "" {
		v.rep.Unhashed++
	}
	if legacy {
		v.rep.Lossy++
		if len(v.rep.LossyLines) < maxLossyLines {
			v.rep.LossyLines = append(v.rep.LossyLines, n)
		}
	}
	v.prevLineNo = n
	if ev.Hash == v.head {
		v.headSeen = true
	}
	return ev, true, nil
}

// repairs checks that a damaged line is followed by the repair event that
// matches it, and that a repair event follows a damaged line.
func (v *Verifier) repairs(n int, ev *Event) error {
	isRepair := ev.Kind == KindLifecycle && ev.Context.Event == EventAuditRepaired
	if d := v.pending; d != nil {
		if !isRepair {
			return v.fail(d.line, d.reason)
		}
		if ev.Context.RepairedBytes != d.bytes || ev.Context.RepairedSHA256 != d.sum {
			return v.fail(d.line, d.reason+" (and the repair record on the next line describes other bytes)")
		}
		v.rep.Repairs = append(v.rep.Repairs, Repair{Line: d.line, MarkerLine: n, Bytes: d.bytes})
		v.pending = nil
		return nil
	}
	if isRepair {
		return v.fail(n, "a repair record with no damaged line before it")
	}
	return nil
}

// chain checks ev's seq and prev against the last valid event.
func (v *Verifier) chain(n int, ev *Event) error {
	if v.rep.Events == 0 && !v.resumed && isContinuation(ev) {
		// The first file at hand is a rotated log's continuation: the
		// chain and the tree carry on from its prev and frontier.
		v.rep.ChainID, v.rep.ContinuedFrom = ev.Context.ChainID, ev.Seq
		return nil
	}
	if v.rep.Events == 0 && !v.resumed {
		switch {
		case ev.Seq != 1:
			return v.fail(n, fmt.Sprintf("the log starts at seq %d, not 1: lines were removed from its start", ev.Seq))
		case ev.Prev != Genesis:
			return v.fail(n, "the first event's prev is not the genesis value: lines were removed from the start")
		case !isHex(ev.Context.ChainID, chainIDLen):
			return v.fail(n, "the first event carries no chain id: this is not the start of a log")
		}
		v.rep.ChainID = ev.Context.ChainID
		return nil
	}
	want := v.rep.HeadSeq + 1
	switch {
	case ev.Hash == v.rep.Head:
		return v.fail(n, fmt.Sprintf("a copy of line %d: a line was duplicated", v.prevLineNo))
	case ev.Seq < want:
		return v.fail(n, fmt.Sprintf("seq %d repeats or goes back (expected %d): a line was duplicated or moved", ev.Seq, want))
	case ev.Seq > want:
		return v.fail(n, fmt.Sprintf("seq jumps from %d to %d: lines were removed or moved", v.rep.HeadSeq, ev.Seq))
	case ev.Prev != v.rep.Head:
		return v.fail(n, fmt.Sprintf("prev does not match the hash of line %d: a line was edited, inserted or moved", v.prevLineNo))
	case isContinuation(ev) && ev.Context.ChainID == v.rep.ChainID:
		return nil // the next file of a rotated log
	case ev.Context.ChainID != "":
		return v.fail(n, "a chain id after the first event: another log was spliced in")
	}
	return nil
}

// leaf adds the event's line to the tree and checks the checkpoints of
// the size it reaches.
func (v *Verifier) leaf(n int, line []byte, ev *Event) error {
	if v.tree == nil {
		return nil // resumed: the caller keeps the tree
	}
	if isContinuation(ev) {
		fr, err := continuedFrontier(ev)
		if err != nil {
			return v.fail(n, err.Error())
		}
		if v.tree.n == 0 {
			v.tree.n, v.tree.h = int64(ev.Seq)-1, fr
		}
		for x, h := range fr {
			if v.tree.h[x] != h {
				return v.fail(n, "the continuation's tree frontier is not that of the records before it")
			}
		}
	}
	if err := v.tree.add(LeafHash(line)); err != nil {
		return v.fail(n, err.Error())
	}
	for len(v.cps) > 0 && v.cps[0].Size <= v.tree.n {
		cp := v.cps[0]
		v.cps = v.cps[1:]
		if OriginChain(cp.Origin) != v.rep.ChainID {
			return v.otherLog(cp)
		}
		if root, err := v.tree.root(); err != nil || root != cp.Root {
			return v.fail(n, fmt.Sprintf("the first %d records do not have the root of the checkpoint signed at that size: "+
				"a record it covers was changed, removed, inserted or moved, or the log was rewritten", cp.Size))
		}
		v.rep.Checkpoints = append(v.rep.Checkpoints, CheckedCheckpoint{Origin: cp.Origin, Size: cp.Size})
	}
	return nil
}

// treeReport sets the report's tree size and root.
func (v *Verifier) treeReport() {
	if v.tree != nil {
		v.rep.TreeSize = v.tree.n
		v.rep.TreeRoot, _ = v.tree.root()
	}
}

// TooLong records that the next line is over MaxLineBytes and returns the
// error.
func (v *Verifier) TooLong() error {
	if v.err != nil {
		return v.err
	}
	if v.pending != nil {
		return v.fail(v.pending.line, v.pending.reason)
	}
	return v.fail(v.rep.Lines+1, reasonTooLong)
}

// End finishes the check at the end of the input; partial is what follows
// the last newline (empty for a well-formed file).
func (v *Verifier) End(partial []byte) (Report, error) {
	v.treeReport()
	if v.err != nil {
		return v.rep, v.err
	}
	if v.pending != nil {
		return v.rep, v.fail(v.pending.line, v.pending.reason)
	}
	if len(partial) > 0 {
		return v.rep, v.fail(v.rep.Lines+1, fmt.Sprintf("the final line has no newline (%d bytes): "+
			"an airlock process stopped mid-write or the file was cut; the next writer records a repair", len(partial)))
	}
	if len(v.cps) > 0 {
		cp := v.cps[0]
		if v.rep.ChainID != "" && OriginChain(cp.Origin) != v.rep.ChainID {
			return v.rep, v.otherLog(cp)
		}
		return v.rep, v.fail(0, fmt.Sprintf("the log holds %d records, fewer than the %d of the checkpoint signed earlier: "+
			"records were cut from its end, or it was rewound or rewritten", v.rep.TreeSize, cp.Size))
	}
	if v.head != "" && !v.headSeen {
		return v.rep, v.fail(0, "the log holds no line with the given head hash: "+
			"lines were removed from its end, or this is another log")
	}
	return v.rep, nil
}

// otherLog fails the check for the checkpoint cp of another log.
func (v *Verifier) otherLog(cp Checkpoint) error {
	return v.fail(0, fmt.Sprintf("the checkpoint of %s is of another log (chain %s), not of this one (chain %s)",
		shown(cp.Origin), shown(OriginChain(cp.Origin)), v.rep.ChainID))
}

func (v *Verifier) fail(line int, reason string) error {
	v.err = &Error{Line: line, Reason: reason}
	return v.err
}
