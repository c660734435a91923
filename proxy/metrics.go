package proxy

// The Prometheus text format (version 0.0.4) is written by hand: the
// official client library's package initialiser registers its Go and
// process collectors in every binary that links it, which costs each
// start of airlock (every command, not only the proxy) about half a
// millisecond and a megabyte (docs/egress.md, "Metrics"); a handful of
// counters and two histograms need no more than this file. The tests
// parse what it writes with the library's own parser
// (github.com/prometheus/common/expfmt).

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics counts what one or more proxies decide and relay, by task and
// client, and serves it in the Prometheus text format. Give the same
// Metrics to every proxy of a gateway (Config.Metrics). Its zero value
// is not usable: make one with NewMetrics.
type Metrics struct {
	mu        sync.Mutex
	decisions map[metricKey]float64 // by task, client, verdict
	bytes     map[metricKey]float64 // by task, client, direction
	upOpen    map[metricKey]float64 // by task, client
	upTotal   map[metricKey]float64
	decideLat map[metricKey]*histogram
	dialLat   map[metricKey]*histogram

	connsOpen, connsTotal atomic.Int64 // client connections, before any identity is known
}

// metricKey is a series' labels: task, client and one more (verdict or
// direction; "" for none).
type metricKey struct{ task, client, extra string }

// latencyBuckets are the upper bounds of the latency histograms, in
// seconds.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// histogram counts observations into latencyBuckets.
type histogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	i, _ := slices.BinarySearch(latencyBuckets, s)
	h.counts[i]++
	h.sum += s
	h.n++
}

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		decisions: map[metricKey]float64{}, bytes: map[metricKey]float64{},
		upOpen: map[metricKey]float64{}, upTotal: map[metricKey]float64{},
		decideLat: map[metricKey]*histogram{}, dialLat: map[metricKey]*histogram{},
	}
}

// The verdict labels of airlock_proxy_decisions_total beyond the gate's
// allow and deny.
const (
	verdictRejected = "rejected" // refused before any egress decision (authentication, malformed, over a bound)
	verdictRefused  = "refused"  // an allowed tunnel refused for what it carried
)

// observe counts one event of a proxy.
func (m *Metrics) observe(ev *Event) {
	if m == nil {
		return
	}
	id := metricKey{task: ev.Task, client: ev.Identity}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch ev.Stage {
	case StageDecided:
		m.decisions[metricKey{ev.Task, ev.Identity, ev.Decision.Verdict.String()}]++
		m.hist(m.decideLat, id).observe(time.Since(ev.Time))
		if ev.Decision.Allowed() {
			m.upOpen[id]++
			m.upTotal[id]++
		}
	case StageRejected:
		m.decisions[metricKey{ev.Task, ev.Identity, verdictRejected}] += float64(max(ev.Count, 1))
	case StageRefused:
		m.decisions[metricKey{ev.Task, ev.Identity, verdictRefused}]++
	case StageClosed:
		m.upOpen[id]--
		// An inspected tunnel's close carries the sum of its requests'
		// bytes: the requests' own are not counted again.
		if ev.Protocol != ProtocolInspected {
			m.bytes[metricKey{ev.Task, ev.Identity, "up"}] += float64(ev.BytesUp)
			m.bytes[metricKey{ev.Task, ev.Identity, "down"}] += float64(ev.BytesDown)
		}
	}
}

// observeDial counts one dial's latency, failed or not.
func (m *Metrics) observeDial(task, identity string, d time.Duration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hist(m.dialLat, metricKey{task: task, client: identity}).observe(d)
}

// connOpened and connClosed count client connections.
func (m *Metrics) connOpened() {
	if m != nil {
		m.connsOpen.Add(1)
		m.connsTotal.Add(1)
	}
}

func (m *Metrics) connClosed() {
	if m != nil {
		m.connsOpen.Add(-1)
	}
}

func (m *Metrics) hist(hs map[metricKey]*histogram, k metricKey) *histogram {
	h := hs[k]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		hs[k] = h
	}
	return h
}

// ServeHTTP writes the metrics in the Prometheus text format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = m.WriteText(w)
}

// WriteText writes the metrics in the Prometheus text format.
func (m *Metrics) WriteText(w io.Writer) error {
	var b strings.Builder
	m.mu.Lock()
	family(&b, "airlock_proxy_decisions_total", "counter", "Egress decisions and refusals, by task, client and verdict (allow, deny; rejected: before any decision; refused: an allowed tunnel, for what it carried).", m.decisions, "verdict")
	family(&b, "airlock_proxy_bytes_total", "counter", "Bytes relayed, by task, client and direction (up: to destinations), counted when a connection ends.", m.bytes, "direction")
	family(&b, "airlock_proxy_upstream_open", "gauge", "Upstream connections and forwarded requests open, by task and client.", m.upOpen, "")
	family(&b, "airlock_proxy_upstream_total", "counter", "Upstream connections and forwarded requests allowed, by task and client.", m.upTotal, "")
	histograms(&b, "airlock_proxy_decision_seconds", "Time from a request read to its decision (resolving included), by task and client.", m.decideLat)
	histograms(&b, "airlock_proxy_dial_seconds", "Time to connect to a checked address, by task and client.", m.dialLat)
	m.mu.Unlock()
	fmt.Fprintf(&b, "# HELP airlock_proxy_client_connections_open Client connections held.\n# TYPE airlock_proxy_client_connections_open gauge\nairlock_proxy_client_connections_open %d\n", m.connsOpen.Load())
	fmt.Fprintf(&b, "# HELP airlock_proxy_client_connections_total Client connections accepted.\n# TYPE airlock_proxy_client_connections_total counter\nairlock_proxy_client_connections_total %d\n", m.connsTotal.Load())
	_, err := io.WriteString(w, b.String())
	return err
}

// family writes one metric family of plain samples, in a stable order.
func family(b *strings.Builder, name, typ, help string, vs map[metricKey]float64, extra string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	for _, k := range sortedKeys(vs) {
		fmt.Fprintf(b, "%s{%s} %s\n", name, labels(k, extra, ""), strconv.FormatFloat(vs[k], 'g', -1, 64))
	}
}

// histograms writes one histogram family.
func histograms(b *strings.Builder, name, help string, hs map[metricKey]*histogram) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	for _, k := range sortedKeys(hs) {
		h := hs[k]
		var cum uint64
		for i, c := range h.counts {
			cum += c
			le := "+Inf"
			if i < len(latencyBuckets) {
				le = strconv.FormatFloat(latencyBuckets[i], 'g', -1, 64)
			}
			fmt.Fprintf(b, "%s_bucket{%s} %d\n", name, labels(k, "", le), cum)
		}
		fmt.Fprintf(b, "%s_sum{%s} %s\n", name, labels(k, "", ""), strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(b, "%s_count{%s} %d\n", name, labels(k, "", ""), h.n)
	}
}

func sortedKeys[V any](m map[metricKey]V) []metricKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b metricKey) int {
		return strings.Compare(a.task+"\x00"+a.client+"\x00"+a.extra, b.task+"\x00"+b.client+"\x00"+b.extra)
	})
}

// labels renders a series' labels; extra names the key's third label
// ("" for none), le a histogram bucket's bound.
func labels(k metricKey, extra, le string) string {
	s := `task="` + labelValue(k.task) + `",client="` + labelValue(k.client) + `"`
	if extra != "" {
		s += `,` + extra + `="` + labelValue(k.extra) + `"`
	}
	if le != "" {
		s += `,le="` + le + `"`
	}
	return s
}

// labelValue escapes a label value as the text format requires:
// backslash, double quote and line feed. Invalid UTF-8 is replaced, since
// the format is UTF-8.
func labelValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
