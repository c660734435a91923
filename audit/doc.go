// Package audit is airlock's append-only, hash-chained audit stream: one
// JSON object a line, one line per decision or record, each line bound to
// the one before it by a SHA-256 hash, so that an edit, a deletion, an
// insertion, a reordering or a cut in the middle of the file is detected by
// Verify and named by its line number.
//
// # Line format
//
// Every line is one JSON object with exactly these members, in this order,
// followed by a single '\n':
//
//	{"seq":N,"ts":"RFC 3339 UTC","kind":K,"decision":D,"reason":R,"context":{...},"prev":P,"hash":H}
//
// The members are:
//
//   - seq: 1 for the first line, then one more on every line.
//   - ts: when the writer appended the line (UTC, RFC 3339 with nanoseconds,
//     trailing zeros trimmed, as Go's time.RFC3339Nano writes it).
//   - kind: command, egress, resource, behavioral or lifecycle (see Kind).
//   - decision: allow, deny or escalate where a gate decided; kill when a
//     resource cap killed a run; alert for a monitor alert; info for a
//     record that decides nothing (see the Decision constants).
//   - reason: never empty; a fixed sentence per decision path.
//   - context: an object, possibly empty (see Context).
//   - prev: the hash of the previous line; for the first line, Genesis
//     (64 zeros).
//   - hash: the lower-case hex SHA-256 defined below.
//
// The writer encodes with Go's encoding/json (HTML-sensitive characters
// escaped as \u003c and so on, no insignificant white space, context
// members in their documented order, empty ones omitted); the verifier
// re-encodes each line it reads and rejects a line that is not in exactly
// that form, so a line has one spelling and no duplicate or unknown member.
//
// # Strings
//
// A string that is valid UTF-8 is a JSON string, as encoding/json writes
// it. A string that is not (a host name, an argument or a reason quoting
// them, with bytes an agent, a sandbox or a proxy client chose) is written
// as the object {"base64":"…"} carrying its bytes, so that every byte is
// kept and the line verifies; see docs/audit.md. Before it writes a line,
// the writer reads it back and refuses it (an error, nothing written)
// unless it verifies and gives back every field: no event can make the
// log unverifiable. Lines that an older airlock wrote with such bytes
// replaced by \ufffd are accepted and counted (Report.Lossy): their hash
// and chain hold.
//
// # Hash and chain
//
// Let B be the line's bytes without the trailing newline and without its
// last member: B is the JSON object {"seq":…,"prev":"P"} as the writer
// encoded it before adding "hash". Then
//
//	hash = lower-case hex( SHA-256( B ) )
//
// and the line is B with its closing '}' replaced by `,"hash":"` + hash +
// `"}`. Since prev is inside B, each hash covers the previous line's hash
// and so, transitively, the whole file up to that line. An outside tool
// verifies a line by cutting the last 75 bytes (`,"hash":"` + 64 hex
// digits + `"}`), appending '}', hashing, comparing, and then checking that
// each line's prev is the hash of the line before it and each seq one more
// than the one before; see ExampleLineHash.
//
// The first line of a log is a lifecycle event "chain_started" whose
// context carries a random 128-bit chainId. Every later hash depends on it,
// so two logs never share a line's hash even when their events are the
// same, lines of one log can never be spliced into another, and the pair
// (chainId, head hash) names one log's state unambiguously.
//
// # What the chain cannot show
//
// A chain detects any change before its last line, but not the removal of
// lines from its end, nor a wholesale rewrite by someone who recomputes
// every hash: both leave a valid, shorter or different chain. Signed
// checkpoints detect them (see below); without a key, record the head hash that Verify reports (with "airlock audit
// verify", which prints it) somewhere the sandboxed code and whoever might
// tamper with the log cannot write — a ticket, a CI artifact, a remote log
// — and later run "airlock audit verify --head HASH FILE": it fails unless
// the log still holds a line with that hash, and still verifies up to it.
//
// # Tree, checkpoints and proofs
//
// Over the chain, the records are the leaves of an RFC 6962 Merkle tree
// (golang.org/x/mod/sumdb/tlog; leaf i is the line of seq i+1), kept in a
// tree file beside the log that is only a cache, checked against the log
// before it is used. A Signer signs C2SP checkpoints of the tree (signed
// notes, Ed25519) and never one inconsistent with the last it signed for
// the log (Log.Checkpoint); VerifyWith checks a log against checkpoints
// kept earlier, which catches a cut, a rewind or a rewrite of what they
// cover. A run's records are proven in its checkpoint (RunClaim.End,
// Log.Prove), and VerifyRunProof checks a proof offline. See
// docs/audit.md.
//
// # Writers
//
// Several airlock processes may append to one file at once: Append takes
// an exclusive flock on the file, reads the last line's seq and hash (from
// the end of the file, never the whole file), writes the new line with one
// O_APPEND write, syncs it to disk (fdatasync) and unlocks. When Append
// returns, the event is on disk: a decision is durable before the action
// it allows. AppendLazy, for records no action waits on (a sandbox's
// launch after its decision, a run's outcome before its teardown record),
// skips the fdatasync and leaves it to the next Append or to Close; it
// refuses a gate's decision. The file is created 0600 and its directory
// 0700. When a write fails or comes up short (a full disk), or the sync
// fails, the writer cuts the file back to where it was and returns the
// error: the file never holds a record its writer was told failed, and
// the caller must not act on that decision (see docs/audit.md,
// "Durability and failures").
//
// # Torn lines
//
// A writer killed in the middle of a write, or a full disk, can leave a
// final line without its newline. Verify reports it as an error: it
// cannot tell a crash from a cut. The next writer does not chain onto the
// damaged bytes, nor does it delete them (they are evidence): it ends them
// with a newline and writes a lifecycle "audit_repaired" event that chains
// onto the last intact line and records the damaged line's length and
// SHA-256 (context repairedBytes and repairedSha256); then it writes its
// own event. Verify accepts a damaged line only when the very next line is
// such a repair event matching its bytes, and lists it in Report.Repairs.
// Nothing after the damage can be hidden by it: the chain continues over
// it, and every later line is verified as usual. A writer refuses to
// append (ErrDamaged) when the last two lines are both damaged: that is
// not a crash.
//
// # Reading
//
// Lines longer than MaxLineBytes are refused without being read into
// memory, so a hostile file cannot exhaust the verifier's memory.
package audit
