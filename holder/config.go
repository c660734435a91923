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
}

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
}

// MarshalJSON writes c with its strings byte for byte.
func (c Config) MarshalJSON() ([]byte, error) {
	s := c.Session
	return json.Marshal(wireConfig{Dir: rawtext.String(c.Dir), PolicyName: rawtext.String(c.PolicyName), Policy: c.Policy,
		Audit: rawtext.String(c.Audit), Sign: c.Sign, AuditKey: rawtext.String(c.AuditKey), Self: c.Self,
		Session: wireSession{rawtext.String(s.ID), rawtext.String(s.Task), rawtext.String(s.Workspace),
			rawtext.String(s.Findings), rawtext.String(s.Image), rawtext.String(s.ImageCache)}})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Config) UnmarshalJSON(b []byte) error {
	var w wireConfig
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	s := w.Session
	*c = Config{Dir: string(w.Dir), PolicyName: string(w.PolicyName), Policy: w.Policy, Audit: string(w.Audit),
		Sign: w.Sign, AuditKey: string(w.AuditKey), Self: w.Self,
		Session: enforcer.SessionRequest{ID: string(s.ID), Task: string(s.Task), Workspace: string(s.Workspace),
			Findings: string(s.Findings), Image: string(s.Image), ImageCache: string(s.ImageCache)}}
	return nil
}
