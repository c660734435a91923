package audit

import (
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/internal/rawtext"
)

// text is a string as a line holds it (docs/audit.md, "Strings"): a
// string that is valid UTF-8 is a JSON string, exactly as encoding/json
// writes it, so every such line is byte for byte what airlock always
// wrote; any other is {"base64":"…"} (package rawtext), so every byte an
// agent or a sandbox chose (a host name, an argument) is kept and
// verifies. Its reader is lenient where the canonical check after it is
// exact: ParseLine re-encodes every line it decodes and refuses any other
// spelling.
type text = rawtext.String

// errNotText is the error for a member that is neither a JSON string nor
// a {"base64":"…"} object.
var errNotText = rawtext.ErrNotText

// plainContext is Context without its JSON methods, and plainBody and
// plainLine the line's members with plain strings: the fast path for the
// common event, whose every string is valid UTF-8, which encoding/json
// then writes exactly as the text encoding does.
type plainContext Context

type plainBody struct {
	Seq      uint64       `json:"seq"`
	TS       time.Time    `json:"ts"`
	Kind     Kind         `json:"kind"`
	Decision string       `json:"decision"`
	Reason   string       `json:"reason"`
	Context  plainContext `json:"context"`
	Prev     string       `json:"prev"`
}

type plainLine struct {
	plainBody
	Hash string `json:"hash"`
}

// encodeBody encodes ev without its hash: the bytes that are hashed.
func encodeBody(ev *Event) ([]byte, error) {
	if allUTF8(ev) {
		return json.Marshal(plainBody{Seq: ev.Seq, TS: ev.TS, Kind: ev.Kind, Decision: ev.Decision,
			Reason: ev.Reason, Context: plainContext(ev.Context), Prev: ev.Prev})
	}
	return json.Marshal(toWireBody(ev))
}

// decodeLine decodes a line's JSON, leniently (ParseLine checks it).
func decodeLine(line []byte) (Event, error) {
	var p plainLine
	err := json.Unmarshal(line, &p)
	if err == nil {
		ev := Event{Seq: p.Seq, TS: p.TS, Kind: p.Kind, Decision: p.Decision, Reason: p.Reason,
			Context: Context(p.Context), Prev: p.Prev, Hash: p.Hash}
		return ev, nil
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return Event{}, err
	}
	var w wireLine // a {"base64":…} member, or a wrong type
	if err := json.Unmarshal(line, &w); err != nil {
		return Event{}, err
	}
	return w.event(), nil
}

// allUTF8 reports whether every string of ev is valid UTF-8.
func allUTF8(ev *Event) bool {
	c := &ev.Context
	for _, s := range [...]string{string(ev.Kind), ev.Decision, ev.Reason, ev.Prev, c.RunID, c.Tool, c.Task,
		string(c.Gate), c.Rule, c.Event, c.Command, c.Path, c.Host, c.Protocol, c.KilledBy, c.Alert, c.ChainID,
		c.RepairedSHA256, c.ArgvSHA256, c.EnvSHA256} {
		if !utf8.ValidString(s) {
			return false
		}
	}
	for _, t := range c.Tails {
		if !utf8.ValidString(t.Field) || !utf8.ValidString(t.Tail) {
			return false
		}
	}
	for _, l := range [...][]string{c.Args, c.Env, c.Addresses} {
		for _, s := range l {
			if !utf8.ValidString(s) {
				return false
			}
		}
	}
	for k, v := range c.Details {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// wireBody is a line without its hash member: the bytes that are hashed.
type wireBody struct {
	Seq      uint64      `json:"seq"`
	TS       time.Time   `json:"ts"`
	Kind     text        `json:"kind"`
	Decision text        `json:"decision"`
	Reason   text        `json:"reason"`
	Context  wireContext `json:"context"`
	Prev     text        `json:"prev"`
}

// wireLine is a whole line.
type wireLine struct {
	wireBody
	Hash text `json:"hash"`
}

// wireContext is Context with every string a text. Its members are
// Context's, in the same order with the same names (a test checks).
type wireContext struct {
	RunID           text            `json:"runId,omitempty"`
	Tool            text            `json:"tool,omitempty"`
	Task            text            `json:"task,omitempty"`
	Gate            text            `json:"gate,omitempty"`
	Rule            text            `json:"rule,omitempty"`
	Event           text            `json:"event,omitempty"`
	Command         text            `json:"command,omitempty"`
	Path            text            `json:"path,omitempty"`
	Args            rawtext.Strings `json:"args,omitempty"`
	Env             rawtext.Strings `json:"env,omitempty"`
	ArgvSHA256      text            `json:"argvSha256,omitempty"`
	EnvSHA256       text            `json:"envSha256,omitempty"`
	Tails           []wireTail      `json:"tails,omitempty"`
	Host            text            `json:"host,omitempty"`
	Port            uint16          `json:"port,omitempty"`
	Protocol        text            `json:"protocol,omitempty"`
	Addresses       rawtext.Strings `json:"addresses,omitempty"`
	KilledBy        text            `json:"killedBy,omitempty"`
	ExitCode        *int            `json:"exitCode,omitempty"`
	Signal          int             `json:"signal,omitempty"`
	WallMs          int64           `json:"wallMs,omitempty"`
	CPUMs           int64           `json:"cpuMs,omitempty"`
	PeakMemoryBytes int64           `json:"peakMemoryBytes,omitempty"`
	PID             int             `json:"pid,omitempty"`
	Alert           text            `json:"alert,omitempty"`
	Count           int             `json:"count,omitempty"`
	WindowSeconds   float64         `json:"windowSeconds,omitempty"`
	TriggerSeqs     []uint64        `json:"triggerSeqs,omitempty"`
	ChainID         text            `json:"chainId,omitempty"`
	RepairedBytes   int64           `json:"repairedBytes,omitempty"`
	RepairedSHA256  text            `json:"repairedSha256,omitempty"`
	Truncated       bool            `json:"truncated,omitempty"`
	Details         map[string]text `json:"details,omitempty"`
}

// wireTail is Tail with its strings texts.
type wireTail struct {
	Field text `json:"field"`
	Bytes int  `json:"bytes"`
	Tail  text `json:"tail"`
}

func (t Tail) wire() wireTail { return wireTail{text(t.Field), t.Bytes, text(t.Tail)} }
func (t wireTail) tail() Tail { return Tail{string(t.Field), t.Bytes, string(t.Tail)} }

// mapList converts each of a list with f, nil kept nil.
func mapList[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

// strMap converts a map's values between string types, nil kept nil.
func strMap[U, T ~string](in map[string]T) map[string]U {
	if in == nil {
		return nil
	}
	out := make(map[string]U, len(in))
	for k, v := range in {
		out[k] = U(v)
	}
	return out
}

func toWireBody(ev *Event) wireBody {
	return wireBody{Seq: ev.Seq, TS: ev.TS, Kind: text(ev.Kind), Decision: text(ev.Decision),
		Reason: text(ev.Reason), Context: toWire(&ev.Context), Prev: text(ev.Prev)}
}

func (w *wireLine) event() Event {
	return Event{Seq: w.Seq, TS: w.TS, Kind: Kind(w.Kind), Decision: string(w.Decision), Reason: string(w.Reason),
		Context: w.Context.context(), Prev: string(w.Prev), Hash: string(w.Hash)}
}

func toWire(c *Context) wireContext {
	return wireContext{
		RunID: text(c.RunID), Tool: text(c.Tool), Task: text(c.Task), Gate: text(c.Gate), Rule: text(c.Rule),
		Event: text(c.Event), Command: text(c.Command), Path: text(c.Path), Args: rawtext.Strings(c.Args),
		Env: rawtext.Strings(c.Env), ArgvSHA256: text(c.ArgvSHA256), EnvSHA256: text(c.EnvSHA256), Tails: mapList(c.Tails, Tail.wire),
		Host: text(c.Host), Port: c.Port, Protocol: text(c.Protocol), Addresses: rawtext.Strings(c.Addresses),
		KilledBy: text(c.KilledBy), ExitCode: c.ExitCode, Signal: c.Signal,
		WallMs: c.WallMs, CPUMs: c.CPUMs, PeakMemoryBytes: c.PeakMemoryBytes, PID: c.PID,
		Alert: text(c.Alert), Count: c.Count, WindowSeconds: c.WindowSeconds, TriggerSeqs: c.TriggerSeqs,
		ChainID: text(c.ChainID), RepairedBytes: c.RepairedBytes, RepairedSHA256: text(c.RepairedSHA256),
		Truncated: c.Truncated, Details: strMap[text](c.Details),
	}
}

func (w *wireContext) context() Context {
	return Context{
		RunID: string(w.RunID), Tool: string(w.Tool), Task: string(w.Task), Gate: decision.Gate(w.Gate),
		Rule: string(w.Rule), Event: string(w.Event), Command: string(w.Command), Path: string(w.Path),
		Args: w.Args, Env: w.Env, ArgvSHA256: string(w.ArgvSHA256), EnvSHA256: string(w.EnvSHA256),
		Tails: mapList(w.Tails, wireTail.tail), Host: string(w.Host), Port: w.Port, Protocol: string(w.Protocol),
		Addresses: w.Addresses, KilledBy: string(w.KilledBy), ExitCode: w.ExitCode, Signal: w.Signal,
		WallMs: w.WallMs, CPUMs: w.CPUMs, PeakMemoryBytes: w.PeakMemoryBytes, PID: w.PID,
		Alert: string(w.Alert), Count: w.Count, WindowSeconds: w.WindowSeconds, TriggerSeqs: w.TriggerSeqs,
		ChainID: string(w.ChainID), RepairedBytes: w.RepairedBytes, RepairedSHA256: string(w.RepairedSHA256),
		Truncated: w.Truncated, Details: strMap[string](w.Details),
	}
}

// MarshalJSON writes ev as a line holds it (without the newline), every
// string in the line's encoding: what an agent or a sandbox chose is kept
// byte for byte wherever an event is written as JSON.
func (ev Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireLine{toWireBody(&ev), text(ev.Hash)})
}

// UnmarshalJSON reads an event in the form MarshalJSON writes. It checks
// nothing else: ParseLine checks a line.
func (ev *Event) UnmarshalJSON(b []byte) error {
	var w wireLine
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*ev = w.event()
	return nil
}

// MarshalJSON writes c as a line's context member.
func (c Context) MarshalJSON() ([]byte, error) { return json.Marshal(toWire(&c)) }

// UnmarshalJSON reads a line's context member.
func (c *Context) UnmarshalJSON(b []byte) error {
	var w wireContext
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = w.context()
	return nil
}
