package holder

import (
	"encoding/json"

	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/internal/rawtext"
	"github.com/airlock-sandbox/airlock/policy"
)

// Config is what a holder needs to open its session: Start sends it to
// the holder process, as wireConfig.
type Config struct {
	// Dir is the runtime directory (Dir) the holder listens in.
	Dir string
	// PolicyName and Policy are the policy's source and bytes, as the
	// client loaded and checked them: the holder decides under exactly
	// those.
	PolicyName string
	Policy     []byte
	// Audit is the audit log's absolute path.
	Audit string
	// Sign, when set, has the session's end sign a checkpoint of the log
	// (docs/audit.md) with the key at AuditKey: "" for the default key
	// (audit.LoadSigner).
	Sign     bool
	AuditKey string
	// Session is the session to open; its ID must be set.
	Session enforcer.SessionRequest
	// Self is the argv, after argv[0], that re-executes airlock as the
	// holder's commands: Self + "hold" runs Hold, Self + "watch" Watch.
	Self []string
	// Pool, when set, makes the holder a pool holder: it keeps sessions'
	// sandboxes built ahead and opens a session on one when asked
	// (OpenPooled), instead of holding Session.
	Pool *PoolSpec
}

// PoolSpec is what a pool holder builds ahead (enforcer.PoolRequest).
type PoolSpec struct {
	Size       int
	Task       string
	Image      string
	ImageCache string
}

// PoolID names a pool holder's socket and lock in the runtime directory,
// in place of a session's id (which never starts with a dot): one pool
// holder per user.
const PoolID = ".pool"

// maxConfig bounds the config a holder reads: a policy of at most
// policy.MaxSize bytes, in base64.
const maxConfig = 2*policy.MaxSize + 1<<20

// ready is the holder's one message to Start.
type ready struct {
	Info  *Info  `json:"info,omitempty"`
	Error string `json:"error,omitempty"`
}

// wireSession is enforcer.SessionRequest as the holder's config carries
// it: its paths byte for byte.
type wireSession struct {
	ID         rawtext.String `json:"id"`
	Task       rawtext.String `json:"task"`
	Workspace  rawtext.String `json:"workspace"`
	Findings   rawtext.String `json:"findings"`
	Image      rawtext.String `json:"image"`
	ImageCache rawtext.String `json:"imageCache"`
}

// wireConfig is Config with every path byte for byte (package rawtext):
// the holder opens exactly the files and directories that session start
// checked, UTF-8 names or not.
type wireConfig struct {
	Dir        rawtext.String  `json:"dir"`
	PolicyName rawtext.String  `json:"policyName"`
	Policy     []byte          `json:"policy"`
	Audit      rawtext.String  `json:"audit"`
	Sign       bool            `json:"sign,omitempty"`
	AuditKey   rawtext.String  `json:"auditKey,omitempty"`
	Session    wireSession     `json:"session"`
	Self       rawtext.Strings `json:"self"`
	Pool       *wirePool       `json:"pool,omitempty"`
}

// wirePool is PoolSpec with its paths byte for byte.
type wirePool struct {
	Size       int            `json:"size"`
	Task       rawtext.String `json:"task,omitempty"`
	Image      rawtext.String `json:"image,omitempty"`
	ImageCache rawtext.String `json:"imageCache,omitempty"`
}

func toWireSession(s enforcer.SessionRequest) wireSession {
	return wireSession{rawtext.String(s.ID), rawtext.String(s.Task), rawtext.String(s.Workspace),
		rawtext.String(s.Findings), rawtext.String(s.Image), rawtext.String(s.ImageCache)}
}

func (s wireSession) request() enforcer.SessionRequest {
	return enforcer.SessionRequest{ID: string(s.ID), Task: string(s.Task), Workspace: string(s.Workspace),
		Findings: string(s.Findings), Image: string(s.Image), ImageCache: string(s.ImageCache)}
}

// MarshalJSON writes c with its strings byte for byte.
func (c Config) MarshalJSON() ([]byte, error) {
	w := wireConfig{Dir: rawtext.String(c.Dir), PolicyName: rawtext.String(c.PolicyName), Policy: c.Policy,
		Audit: rawtext.String(c.Audit), Sign: c.Sign, AuditKey: rawtext.String(c.AuditKey), Self: c.Self,
		Session: toWireSession(c.Session)}
	if p := c.Pool; p != nil {
		w.Pool = &wirePool{p.Size, rawtext.String(p.Task), rawtext.String(p.Image), rawtext.String(p.ImageCache)}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Config) UnmarshalJSON(b []byte) error {
	var w wireConfig
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = Config{Dir: string(w.Dir), PolicyName: string(w.PolicyName), Policy: w.Policy, Audit: string(w.Audit),
		Sign: w.Sign, AuditKey: string(w.AuditKey), Self: w.Self, Session: w.Session.request()}
	if p := w.Pool; p != nil {
		c.Pool = &PoolSpec{p.Size, string(p.Task), string(p.Image), string(p.ImageCache)}
	}
	return nil
}
