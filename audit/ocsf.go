package audit

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/internal/termtext"
)

// OCSF export (docs/audit.md, "Shipping"): each event as an event of the
// Open Cybersecurity Schema Framework, version OCSFVersion, so that a
// SIEM ingests the stream: command decisions, launches and outcomes as
// Process Activity (1007), egress decisions as HTTP Activity (4002) when
// they came over HTTP or CONNECT, else Network Activity (4001), monitor
// alerts as Detection Finding (2004). Written by hand, not generated: a
// few fixed objects, each with the attributes its class requires.
//
// Every attribute keeps its OCSF type: a string attribute is a JSON
// string even when the log's bytes are not UTF-8 (an argument, a host
// name the sandbox chose), written with each such byte as \xNN, and the
// exact bytes go beside it in unmapped.airlock.bytes, by the attribute's
// path, in base64 (ocsfStrings). The log's own {"base64":…} form is for
// reading the log back; in a string attribute a SIEM's validator refuses
// the event and its searches miss it.

// OCSFVersion is the OCSF schema version the export follows.
const OCSFVersion = "1.7.0"

// The OCSF classes and categories the export writes.
const (
	ocsfProcessActivity  = 1007
	ocsfNetworkActivity  = 4001
	ocsfHTTPActivity     = 4002
	ocsfDetectionFinding = 2004
)

// OCSFSource is what the export says about where the events come from.
type OCSFSource struct {
	// ChainID is the log's chain id (from its first line).
	ChainID string
	// Host names the device airlock ran on.
	Host string
	// Version is airlock's version, "" if unknown.
	Version string
}

// OCSF returns ev as an OCSF event, or false for an event the export
// leaves out (the log's own records: chain_started, audit_repaired).
// Its every string is valid UTF-8 (ocsfStrings).
func OCSF(ev Event, src OCSFSource) (map[string]any, bool) {
	c := &ev.Context
	out := map[string]any{
		"time":        ev.TS.UnixMilli(),
		"message":     ev.Reason,
		"metadata":    ocsfMetadata(ev, src),
		"severity_id": 1,
		"unmapped":    map[string]any{"airlock": ocsfUnmapped(ev)},
	}
	if c.Count > 0 && ev.Kind != KindBehavioral {
		out["count"] = c.Count
	}
	actor := map[string]any{"app_name": "airlock"}
	if c.Tool != "" {
		actor["app_name"] = "airlock tool " + c.Tool
	}
	device := map[string]any{"hostname": orDash(src.Host), "type_id": 0}
	switch {
	case ev.Kind == KindCommand, ev.Kind == KindResource,
		ev.Kind == KindLifecycle && (c.Event == EventSandboxLaunched || c.Event == EventSandboxTornDown ||
			c.Event == EventRunAbandoned || c.Event == EventStartupRefused || c.Event == EventSetupFailed):
		activity := 1 // Launch
		switch {
		case ev.Kind == KindResource || c.Event == EventSandboxTornDown:
			activity = 2 // Terminate
		case c.Event == EventRunAbandoned:
			activity = 99
		}
		setClass(out, ocsfProcessActivity, activity)
		out["actor"], out["device"] = actor, device
		out["process"] = ocsfProcess(ev)
		if c.ExitCode != nil {
			out["exit_code"] = *c.ExitCode
		}
		securityControl(out, ev.Decision)
		if c.Event == EventSetupFailed {
			out["status_id"] = 2 // Failure: the launch did not happen; no control acted
		}
	case ev.Kind == KindEgress:
		// An ip is an address (ip_t): one that does not parse is left out.
		dst := map[string]any{"hostname": orDash(c.Host), "port": int(c.Port)}
		if len(c.Addresses) > 0 {
			if a, err := netip.ParseAddr(c.Addresses[0]); err == nil {
				dst["ip"] = a.WithZone("").String()
			}
		}
		out["dst_endpoint"] = dst
		if ap, err := netip.ParseAddrPort(c.Details["client"]); err == nil {
			out["src_endpoint"] = map[string]any{"ip": ap.Addr().WithZone("").String(), "port": int(ap.Port())}
		}
		out["actor"], out["device"] = actor, device
		closed := ev.Decision == DecisionInfo
		if c.Protocol == "http" || c.Protocol == "connect" {
			method, activity := "GET", 3
			if c.Protocol == "connect" {
				method, activity = "CONNECT", 1
			}
			setClass(out, ocsfHTTPActivity, activity)
			target := net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
			out["http_request"] = map[string]any{"http_method": method,
				"url": map[string]any{"url_string": target, "hostname": c.Host, "port": int(c.Port)}}
		} else {
			activity := 1 // Open
			switch {
			case closed:
				activity = 2 // Close
			case ev.Decision == DecisionDeny:
				activity = 5 // Refuse
			}
			setClass(out, ocsfNetworkActivity, activity)
		}
		securityControl(out, ev.Decision)
	case ev.Kind == KindBehavioral:
		setClass(out, ocsfDetectionFinding, 1) // Create
		out["severity_id"] = alertSeverity(c.Alert)
		out["is_alert"] = true
		info := map[string]any{"uid": fmt.Sprintf("%s:%d", src.ChainID, ev.Seq), "title": c.Alert, "desc": ev.Reason,
			"analytic": map[string]any{"name": c.Alert, "type_id": 1}}
		if len(c.TriggerSeqs) > 0 {
			refs := make([]string, len(c.TriggerSeqs))
			for i, s := range c.TriggerSeqs {
				refs[i] = fmt.Sprintf("%s:%d", src.ChainID, s)
			}
			info["related_events_count"] = max(c.Count, len(refs))
			out["unmapped"].(map[string]any)["airlock"].(map[string]any)["triggerEvents"] = refs
		}
		out["finding_info"] = info
		out["device"] = device
	default:
		return nil, false
	}
	raw := map[string]string{}
	ocsfStrings(out, "", raw)
	if len(raw) > 0 {
		out["unmapped"].(map[string]any)["airlock"].(map[string]any)["bytes"] = raw
	}
	return out, true
}

// ocsfStrings makes every string of the event v, at path p, valid UTF-8:
// a string that is not has each byte that is not UTF-8 written \xNN (as
// termtext writes it), and its exact bytes put in raw, in base64, by its
// path ("process.cmd_line", "unmapped.airlock.triggerEvents[0]").
func ocsfStrings(v any, p string, raw map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			kp := k
			if p != "" {
				kp = p + "." + k
			}
			if s, ok := e.(string); ok {
				x[k] = ocsfString(s, kp, raw)
				continue
			}
			ocsfStrings(e, kp, raw)
		}
	case []string:
		for i, s := range x {
			x[i] = ocsfString(s, fmt.Sprintf("%s[%d]", p, i), raw)
		}
	}
}

// ocsfString is s as ocsfStrings writes the string at path p.
func ocsfString(s, p string, raw map[string]string) string {
	if utf8.ValidString(s) {
		return s
	}
	raw[p] = base64.StdEncoding.EncodeToString([]byte(s))
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// setClass sets the classification of an OCSF event.
func setClass(out map[string]any, class, activity int) {
	out["class_uid"], out["category_uid"], out["activity_id"] = class, class/1000, activity
	out["type_uid"] = class*100 + activity
}

// securityControl adds the Security Control profile's outcome: what the
// gate decided.
func securityControl(out map[string]any, decision string) {
	switch decision {
	case DecisionAllow:
		out["action_id"], out["disposition_id"], out["status_id"] = 1, 1, 1
	case DecisionDeny, DecisionEscalate:
		out["action_id"], out["disposition_id"], out["status_id"] = 2, 2, 2
		out["severity_id"] = 2
	case DecisionKill:
		out["status_id"], out["severity_id"] = 2, 3
	}
}

func ocsfMetadata(ev Event, src OCSFSource) map[string]any {
	product := map[string]any{"name": "airlock", "vendor_name": "airlock"}
	if src.Version != "" {
		product["version"] = src.Version
	}
	m := map[string]any{"version": OCSFVersion, "product": product, "log_name": "airlock audit",
		"uid": fmt.Sprintf("%s:%d", src.ChainID, ev.Seq), "sequence": ev.Seq,
		"original_time": ev.TS.Format("2006-01-02T15:04:05.999999999Z07:00"), "profiles": []string{"security_control", "host"}}
	if ev.Context.RunID != "" {
		m["correlation_uid"] = ev.Context.RunID
	}
	return m
}

// ocsfProcess is the process a command record is about: the run is its
// uid (the sandbox's pids are its own), its command line as asked.
func ocsfProcess(ev Event) map[string]any {
	c := &ev.Context
	p := map[string]any{"uid": orDash(c.RunID), "name": orDash(c.Command)}
	if c.Command != "" || len(c.Args) > 0 {
		p["cmd_line"] = commandLine(c)
	}
	if c.Path != "" {
		name := c.Path[strings.LastIndexByte(c.Path, '/')+1:]
		p["file"] = map[string]any{"path": c.Path, "name": orDash(name), "type_id": 1}
	}
	if c.PID > 0 {
		p["pid"] = c.PID
	}
	return p
}

// ocsfUnmapped keeps what OCSF has no place for: the record's place in the
// chain, so that a SIEM event can be traced back to a verifiable line.
func ocsfUnmapped(ev Event) map[string]any {
	c := &ev.Context
	u := map[string]any{"seq": ev.Seq, "hash": ev.Hash, "kind": string(ev.Kind), "decision": ev.Decision}
	for k, v := range map[string]string{"gate": string(c.Gate), "rule": c.Rule, "event": c.Event,
		"argvSha256": c.ArgvSHA256, "envSha256": c.EnvSHA256, "killedBy": c.KilledBy, "task": c.Task} {
		if v != "" {
			u[k] = v
		}
	}
	if c.Truncated {
		u["truncated"] = true
	}
	return u
}

// alertSeverity grades a monitor rule for a SIEM.
func alertSeverity(rule string) int {
	switch rule {
	case "escape_suspected":
		return 5 // Critical
	case "metadata_access", "audit_repaired":
		return 4 // High
	case "resource_kill":
		return 2 // Low
	}
	return 3 // Medium
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ExportOCSF writes the events of the log r that f selects as OCSF events,
// one JSON object a line, verifying the chain as it reads: it stops at the
// first bad line with its *Error, having written only verified events.
func ExportOCSF(w io.Writer, r io.Reader, f Filter, src OCSFSource) (Report, int, error) {
	v := NewVerifier("")
	n := 0
	rep, err := v.ReadAll(r, func(ev Event) error {
		if !f.Match(ev) {
			return nil
		}
		src.ChainID = cmp.Or(src.ChainID, v.rep.ChainID)
		o, ok := OCSF(ev, src)
		if !ok {
			return nil
		}
		b, err := termtext.JSON(o, "")
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		n++
		return nil
	})
	return rep, n, err
}
