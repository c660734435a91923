package policy

import (
	"io/fs"
	"os"

	"github.com/airlock-sandbox/airlock/internal/hostfile"
)

// Trusted checks that the file opened from path, with fstat's fi, is one
// only the caller or root could have written or put there, by the rule
// of policy files (docs/policy.md, "Where the policy comes from"), and
// returns its real path. Other files airlock trusts as it trusts its
// policy (a shared gateway's clients, docs/egress.md) are held to it
// too. Where airlock cannot tell who may write a file, it fails. It is
// the rule of internal/hostfile, for the caller.
func Trusted(path string, fi fs.FileInfo) (string, error) {
	return hostfile.Trusted(path, fi, uint32(os.Geteuid()), "you")
}
