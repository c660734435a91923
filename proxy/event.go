package proxy

import (
	"encoding/json"
	"net/netip"
	"time"

	"github.com/airlock-sandbox/airlock/decision"
	"github.com/airlock-sandbox/airlock/egress"
)

// Protocol is how a client asked for a destination.
type Protocol string

// The protocols the proxy serves.
const (
	ProtocolHTTP    Protocol = "http"    // absolute-form HTTP request
	ProtocolConnect Protocol = "connect" // HTTP CONNECT tunnel
	ProtocolSOCKS5  Protocol = "socks5"  // SOCKS5 CONNECT tunnel
	ProtocolSOCKS4  Protocol = "socks4"  // SOCKS4 or SOCKS4a, always refused
	// ProtocolInspected is a request inside an inspected tunnel.
	ProtocolInspected Protocol = "inspected"
	// ProtocolUnknown is a connection refused before anything of it was
	// read.
	ProtocolUnknown Protocol = "unknown"
)

// Stage says when an Event was reported.
type Stage string

// The stages of a request's life that are reported.
const (
	// StageDecided is reported once per request, after the decision and
	// before any upstream connection is made.
	StageDecided Stage = "decided"
	// StageClosed is reported when an allowed request's connection ends,
	// or its upstream connection failed.
	StageClosed Stage = "closed"
	// StageRejected is reported for a connection or request the proxy
	// refused before any egress decision: a connection past its client's
	// share, a SOCKS4 request, a malformed or oversized request. A flood of
	// them is coalesced: Count says how many refusals the event stands for.
	StageRejected Stage = "rejected"
	// StageRefused is reported when the proxy refuses an allowed tunnel
	// for what it carries: a TLS ClientHello naming another host (SNI),
	// an HTTP request naming another host, bytes that are not the
	// protocol the entry requires.
	StageRefused Stage = "refused"
	// StageBudget is reported when a budget's cap is reached (or a
	// connection is refused for its concurrency cap).
	StageBudget Stage = "budget"
)

// Event is one request's decision, and, at StageClosed, its outcome.
type Event struct {
	// Stage is when the event was reported.
	Stage Stage
	// Time is when the request had been read and was decided.
	Time time.Time
	// Task is the proxy's task.
	Task string
	// Identity names the gateway client that asked (Client.Name), ""
	// for a proxy of one task and for a refusal before authentication.
	Identity string
	// Client is the client's address as the listener reported it.
	Client string
	// Protocol is how the client asked.
	Protocol Protocol
	// Requested is the destination as the client spelled it.
	Requested string
	// Target is the destination as the gate normalised it; zero when the
	// request could not be parsed.
	Target egress.Target
	// Resolved holds every address the name resolved to (nil for an IP
	// literal or when no lookup was made).
	Resolved []netip.Addr
	// Dialled is the address the proxy connected to; zero when it did not
	// connect.
	Dialled netip.AddrPort
	// Decision is the egress decision: the gate's, or the proxy's own
	// refusal (a malformed request, a loop to the proxy itself, a limit).
	Decision decision.Decision
	// BytesUp counts bytes relayed from the client to the destination
	// (for HTTP requests, the request body only).
	BytesUp int64
	// BytesDown counts bytes relayed from the destination to the client
	// (for HTTP requests, the response body only).
	BytesDown int64
	// Duration is how long the connection was open, at StageClosed.
	Duration time.Duration
	// Err is why an allowed request failed or ended abnormally.
	Err error
	// Count is how many refusals a StageRejected event stands for: 1, or
	// more when a flood was coalesced (the event is then the first of
	// them). 0 for the other stages.
	Count int
	// Method and Path are an HTTP request's, when the proxy read one
	// (absolute-form, or inside an inspected tunnel): the path as sent
	// with its query, at most maxRequestedBytes of it.
	Method, Path string
	// Entry is the allowlist entry that allowed the destination, for a
	// request the entry's rules decided.
	Entry string
	// Credential names the credential the proxy added to the request.
	Credential string
	// Budget names the budget that refused the request or was reached.
	Budget string

	client client        // who asked, for the fair share
	tunnel *slot         // the request's hold on the tunnel share, once it has one
	entry  *egress.Entry // the options of the entry that allowed it
	use    *budgetUse    // its place in the budgets' counters
	addrs  []netip.Addr  // the checked addresses, for more connections of an inspected tunnel
}

// eventJSON is the wire form of an Event.
type eventJSON struct {
	Stage     Stage             `json:"stage"`
	Time      time.Time         `json:"time"`
	Task      string            `json:"task"`
	Identity  string            `json:"identity,omitempty"`
	Client    string            `json:"client"`
	Protocol  Protocol          `json:"protocol"`
	Requested string            `json:"requested"`
	Target    string            `json:"target,omitempty"`
	Resolved  []netip.Addr      `json:"resolved,omitempty"`
	Dialled   string            `json:"dialled,omitempty"`
	Decision  decision.Decision `json:"decision"`
	BytesUp   int64             `json:"bytesUp"`
	BytesDown int64             `json:"bytesDown"`
	Duration  float64           `json:"durationMs"`
	Err       string            `json:"error,omitempty"`
	Count     int               `json:"count,omitempty"`
	Method    string            `json:"method,omitempty"`
	Path      string            `json:"path,omitempty"`
	Entry     string            `json:"entry,omitempty"`
	Cred      string            `json:"credential,omitempty"`
	Budget    string            `json:"budget,omitempty"`
}

// MarshalJSON encodes the event as one flat object: the target and the
// dialled address as host:port strings, the duration in milliseconds and
// the error as its message.
func (e Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{
		Stage: e.Stage, Time: e.Time, Task: e.Task, Identity: e.Identity, Client: e.Client,
		Protocol: e.Protocol, Requested: e.Requested, Target: e.Target.String(),
		Resolved: e.Resolved, Decision: e.Decision,
		BytesUp: e.BytesUp, BytesDown: e.BytesDown,
		Duration: float64(e.Duration) / float64(time.Millisecond),
		Count:    e.Count,
		Method:   e.Method, Path: e.Path, Entry: e.Entry, Cred: e.Credential, Budget: e.Budget,
	}
	if e.Dialled.IsValid() {
		j.Dialled = e.Dialled.String()
	}
	if e.Err != nil {
		j.Err = e.Err.Error()
	}
	return json.Marshal(j)
}
