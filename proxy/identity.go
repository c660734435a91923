package proxy

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Client is one sandbox's identity at a shared gateway (docs/egress.md,
// "The shared gateway"): a name, the task whose allowlist applies to it,
// and the SHA-256 of its token. The client presents both as the user and
// password of Proxy-Authorization (Basic) or of SOCKS5 (RFC 1929).
type Client struct {
	// Name names the client in the audit stream and the metrics; it is
	// the user part of its credentials.
	Name string
	// Task is the task whose allowlist, credentials and budgets apply.
	Task string
	// TokenSHA256 is the SHA-256 of the client's token (the gateway never
	// holds the token itself).
	TokenSHA256 [sha256.Size]byte
	// Expires, when not zero, is when the token stops being accepted.
	Expires time.Time
}

// tokenBytes is the entropy of a minted token: 256 bits, so that a plain
// SHA-256 of it is a safe thing to store (no password hashing needed for
// a secret nobody chose).
const tokenBytes = 32

// MintToken returns a new random token and its SHA-256, hex-encoded (the
// form of a gateway file's tokenSHA256).
func MintToken() (token, sha string, err error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("proxy: minting a token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(sum[:]), nil
}

// Fingerprint is what the audit stream and the logs show of a token: the
// first 12 hex digits of its SHA-256, never the token.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:6])
}

// maxClientName bounds a client's name.
const maxClientName = 64

// validClientName reports whether s may name a client: 1 to 64 ASCII
// letters, digits, '.', '_' or '-' (no ':', which would end the user
// part of a Basic credential; nothing a terminal or a label would need
// escaped).
func validClientName(s string) bool {
	if s == "" || len(s) > maxClientName {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// The refusals of a client's credentials. The client is told only
// reasonAuthClient; the audit stream gets the whole reason, with the name
// as sent and the presented token's fingerprint, never the token.
const (
	reasonAuthClient  = "proxy authentication required: send your client name and token as the proxy's user and password"
	reasonAuthMissing = "proxy authentication refused: the request carries no Proxy-Authorization (Basic)"
	reasonAuthMany    = "proxy authentication refused: the request carries more than one Proxy-Authorization"
	reasonAuthScheme  = "proxy authentication refused: Proxy-Authorization is not Basic with standard base64 of name:token"
	reasonAuthWrong   = "proxy authentication refused: client %q with token %s: not its token"
	// An unknown name is not shown: it may be a token sent as the name.
	reasonAuthUnknown = "proxy authentication refused: no client named as sent (name %s, token %s, as fingerprints)"
	reasonAuthExpired = "proxy authentication refused: client %q: its token (%s) expired at %s"
	reasonAuthMethod  = "proxy authentication refused: the SOCKS5 greeting does not offer username/password (RFC 1929)"
	reasonAuthSOCKS   = "proxy authentication refused: malformed SOCKS5 username/password request"
	reasonAuthSwitch  = "proxy authentication refused: the connection is client %q's, and a request on it names client %+q"
)

// clients is a gateway's table of client identities.
type clients struct {
	byName map[string]*tenant
	now    func() time.Time
}

// unknownHash is compared against when the name is unknown, so that a
// wrong name costs what a wrong token does.
var unknownHash [sha256.Size]byte

// check returns the tenant whose name and token these are, or why not.
// The token's hash is compared in constant time.
func (cs *clients) check(name, token string) (*tenant, string) {
	sum := sha256.Sum256([]byte(token))
	t := cs.byName[name]
	want := unknownHash
	if t != nil {
		want = t.client.TokenSHA256
	}
	match := subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	switch {
	case t == nil:
		return nil, fmt.Sprintf(reasonAuthUnknown, Fingerprint(name), Fingerprint(token))
	case !match:
		return nil, fmt.Sprintf(reasonAuthWrong, name, Fingerprint(token))
	}
	if e := t.client.Expires; !e.IsZero() && !cs.now().Before(e) {
		return nil, fmt.Sprintf(reasonAuthExpired, name, Fingerprint(token), e.UTC().Format(time.RFC3339))
	}
	return t, ""
}

// checkHeader authenticates an HTTP request by its Proxy-Authorization:
// exactly one, Basic, standard base64 (padded) of "name:token".
func (cs *clients) checkHeader(h http.Header) (*tenant, string) {
	vs := h.Values("Proxy-Authorization")
	switch len(vs) {
	case 0:
		return nil, reasonAuthMissing
	case 1:
	default:
		return nil, reasonAuthMany
	}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(vs[0]), " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return nil, reasonAuthScheme
	}
	b, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return nil, reasonAuthScheme
	}
	name, token, ok := strings.Cut(string(b), ":")
	if !ok {
		return nil, reasonAuthScheme
	}
	return cs.check(name, token)
}
