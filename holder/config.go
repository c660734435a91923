package holder

import (
	"github.com/airlock-sandbox/airlock/enforcer"
	"github.com/airlock-sandbox/airlock/policy"
)

// Config is what a holder needs to open its session: Start sends it to
// the holder process.
type Config struct {
	// Dir is the runtime directory (Dir) the holder listens in.
	Dir string `json:"dir"`
	// PolicyName and Policy are the policy's source and bytes, as the
	// client loaded and checked them: the holder decides under exactly
	// those.
	PolicyName string `json:"policyName"`
	Policy     []byte `json:"policy"`
	// Audit is the audit log's absolute path.
	Audit string `json:"audit"`
	// Sign, when set, has the session's end sign a checkpoint of the log
	// (docs/audit.md) with the key at AuditKey: "" for the default key
	// (audit.LoadSigner).
	Sign     bool   `json:"sign,omitempty"`
	AuditKey string `json:"auditKey,omitempty"`
	// Session is the session to open; its ID must be set.
	Session enforcer.SessionRequest `json:"session"`
	// Self is the argv, after argv[0], that re-executes airlock as the
	// holder's commands: Self + "hold" runs Hold, Self + "watch" Watch.
	Self []string `json:"self"`
}

// maxConfig bounds the config a holder reads: a policy of at most
// policy.MaxSize bytes, in base64.
const maxConfig = 2*policy.MaxSize + 1<<20

// ready is the holder's one message to Start.
type ready struct {
	Info  *Info  `json:"info,omitempty"`
	Error string `json:"error,omitempty"`
}
