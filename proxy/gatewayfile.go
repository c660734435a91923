package proxy

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/airlock-sandbox/airlock/internal/strict"
)

// MaxGatewayFile bounds a gateway file's size.
const MaxGatewayFile = 1 << 20

// gatewayFile is the wire form of a gateway file (docs/egress.md, "The
// shared gateway").
type gatewayFile struct {
	// Clients are the sandboxes the gateway serves.
	Clients []gatewayFileClient `json:"clients"`
}

// gatewayFileClient is one client of a gateway file.
type gatewayFileClient struct {
	Name        string `json:"name"`
	Task        string `json:"task"`
	TokenSHA256 string `json:"tokenSHA256"`
	Expires     string `json:"expires,omitempty"` // RFC 3339
}

// ParseGatewayFile parses a gateway file named name (used in errors):
// JSON, or YAML when yaml is set. Parsing is strict (unknown fields,
// wrong types, duplicate keys are errors at their line and column), and
// every client must have a valid unique name, a task (whether the policy
// has it is the caller's check), the SHA-256 of its token as 64 lower-case
// hex digits, unique, and optionally an RFC 3339 expiry.
func ParseGatewayFile(name string, data []byte, yaml bool) ([]Client, error) {
	var f gatewayFile
	where, err := strict.Decode("gateway file", data, yaml, MaxGatewayFile, &f)
	if err != nil {
		return nil, strict.InFile(err, name)
	}
	var errs strict.Errors
	var out []Client
	names, hashes := map[string]bool{}, map[string]bool{}
	if len(f.Clients) == 0 {
		errs = append(errs, strict.Problem("clients", "the gateway has no clients", "list each sandbox: name, task, tokenSHA256 (airlock proxy token)"))
	}
	for i, fc := range f.Clients {
		at := strict.Index("clients", i)
		c := Client{Name: fc.Name, Task: fc.Task}
		problem := func(field, msg, hint string) {
			errs = append(errs, strict.Problem(strict.Field(at, field), msg, hint))
		}
		switch {
		case !validClientName(fc.Name):
			problem("name", fmt.Sprintf("%+q is not a client name", fc.Name), fmt.Sprintf("1 to %d letters, digits, '.', '_' or '-'", maxClientName))
		case names[fc.Name]:
			problem("name", fmt.Sprintf("client %q is listed twice", fc.Name), "")
		}
		names[fc.Name] = true
		if !strict.Name(fc.Task) {
			problem("task", fmt.Sprintf("%+q is not a task name", fc.Task), "a task of the policy's egress.taskAllowlist")
		}
		sum, herr := hex.DecodeString(fc.TokenSHA256)
		switch {
		case herr != nil || len(sum) != len(c.TokenSHA256) || hex.EncodeToString(sum) != fc.TokenSHA256:
			problem("tokenSHA256", "not the SHA-256 of a token as 64 lower-case hex digits", "airlock proxy token prints a token and its tokenSHA256")
		case hashes[fc.TokenSHA256]:
			problem("tokenSHA256", "another client has the same token", "mint a token per sandbox")
		default:
			copy(c.TokenSHA256[:], sum)
			if c.TokenSHA256 == unknownHash {
				problem("tokenSHA256", "all zeros is not a token's hash", "")
			}
		}
		hashes[fc.TokenSHA256] = true
		if fc.Expires != "" {
			if c.Expires, err = time.Parse(time.RFC3339, fc.Expires); err != nil {
				problem("expires", fmt.Sprintf("%+q is not an RFC 3339 time", fc.Expires), "e.g. 2026-12-31T23:59:59Z")
			}
		}
		out = append(out, c)
	}
	if len(errs) > 0 {
		where.Place(errs, name)
		return nil, errs
	}
	return out, nil
}
