package audit

import "time"

// A Hook watches every event of a log, in file order, while the log is
// locked, and may add events right after the ones its Log writes. The
// monitor is one: through a hook, a rule sees the events that other
// airlock processes appended to the same file, so that three denied
// commands in three separate "airlock run" processes still make a
// repeated-denial alert, raised exactly once.
//
// The hook's methods are called with the file locked: they must be quick
// and must not call back into the Log. When Append fails after Follow was
// called, the hook has seen events that are not in the file: a hook that
// is also a Resetter is then reset, and shown the file's recent events
// again before the next append, so that it never counts an event the
// file does not hold.
type Hook interface {
	// Lookback is how far back, from now, the hook wants to see the
	// events already in the file when its Log first writes.
	Lookback() time.Duration
	// Seen is called with each event that this Log did not write: those
	// already in the file within Lookback, then those that other writers
	// appended between this Log's writes. Damaged lines are skipped.
	Seen(ev Event)
	// Follow is called with each event this Log writes (with its seq, ts
	// and hash set) and returns events to write right after it, in the
	// same write and under the same lock. Follow is not called on them.
	Follow(ev Event) []Event
}

// WithHook makes the Log show every event to h and write what h adds.
func WithHook(h Hook) Option { return func(l *Log) { l.hook = h } }

// A Sifter is a Hook that needs only some of the events already in the
// file: Wants reports whether a line of that kind and decision, whose
// bytes are line, may matter to it. A line it does not want is not
// parsed, let alone shown to Seen: a log busy with a task's runs holds
// hundreds of lines within a monitor's window, and every airlock command
// that opens it reads them (a fifth of an airlock run's CPU, parsed).
// The kind and decision are read from the line's head, which every
// writer puts first and no caller's bytes come before; a line whose head
// does not read so is parsed as before.
type Sifter interface {
	Wants(kind Kind, decision string, line []byte) bool
}

// A Resetter is a Hook that can forget every event it was shown. A Log
// resets its hook after an append that failed (a full disk), because the
// hook was shown events that were not written.
type Resetter interface {
	Reset()
}
