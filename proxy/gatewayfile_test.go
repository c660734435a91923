package proxy

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"
)

const goodHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" // sha256("test")

func TestParseGatewayFile(t *testing.T) {
	cs, err := ParseGatewayFile("gw.yaml", []byte(`clients:
  - name: sandbox-a
    task: web_search
    tokenSHA256: `+goodHash+`
    expires: "2026-12-31T23:59:59Z"
`), true)
	if err != nil {
		t.Fatal(err)
	}
	want := Client{Name: "sandbox-a", Task: "web_search", Expires: time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)}
	copy(want.TokenSHA256[:], must(hex.DecodeString(goodHash)))
	if len(cs) != 1 || cs[0] != want {
		t.Errorf("parsed %+v, want %+v", cs, want)
	}
	for what, c := range map[string]struct{ body, want string }{
		"unknown field":  {`{"clients": [{"name": "a", "task": "t", "tokenSHA256": "` + goodHash + `", "token": "x"}]}`, `unknown field "token"`},
		"duplicate key":  {`{"clients": [{"name": "a", "name": "b", "task": "t", "tokenSHA256": "` + goodHash + `"}]}`, "duplicate"},
		"no clients":     {`{"clients": []}`, "no clients"},
		"upper-case hex": {`{"clients": [{"name": "a", "task": "t", "tokenSHA256": "` + strings.ToUpper(goodHash) + `"}]}`, "lower-case hex"},
		"short hash":     {`{"clients": [{"name": "a", "task": "t", "tokenSHA256": "abcd"}]}`, "64 lower-case hex"},
		"a token":        {`{"clients": [{"name": "a", "task": "t", "tokenSHA256": "vUNXAXFzja3oRQD7Z0yJTy52nMpuDxug1jFZ8jeTTA8"}]}`, "64 lower-case hex"},
		"zero hash":      {`{"clients": [{"name": "a", "task": "t", "tokenSHA256": "` + strings.Repeat("0", 64) + `"}]}`, "all zeros"},
		"bad name":       {`{"clients": [{"name": "a:b", "task": "t", "tokenSHA256": "` + goodHash + `"}]}`, "not a client name"},
		"name twice":     {`{"clients": [{"name": "a", "task": "t", "tokenSHA256": "` + goodHash + `"}, {"name": "a", "task": "t", "tokenSHA256": "` + strings.Repeat("1", 64) + `"}]}`, "listed twice"},
		"token twice":    {`{"clients": [{"name": "a", "task": "t", "tokenSHA256": "` + goodHash + `"}, {"name": "b", "task": "t", "tokenSHA256": "` + goodHash + `"}]}`, "same token"},
		"no task":        {`{"clients": [{"name": "a", "tokenSHA256": "` + goodHash + `"}]}`, "not a task name"},
		"bad expiry":     {`{"clients": [{"name": "a", "task": "t", "tokenSHA256": "` + goodHash + `", "expires": "tomorrow"}]}`, "RFC 3339"},
		"trailing data":  {`{"clients": []} {}`, ""},
		"null":           {`{"clients": null}`, ""},
	} {
		_, err := ParseGatewayFile("gw.json", []byte(c.body), false)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "gw.json:") {
			t.Errorf("%s: %v", what, err)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// FuzzGatewayFile: the parser never panics, and what it accepts is a
// valid client table (NewGateway's own checks agree).
func FuzzGatewayFile(f *testing.F) {
	f.Add([]byte(`{"clients": [{"name": "a", "task": "t", "tokenSHA256": "`+goodHash+`"}]}`), false)
	f.Add([]byte("clients:\n  - name: a\n    task: t\n    tokenSHA256: "+goodHash+"\n    expires: \"2026-01-01T00:00:00Z\"\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, yaml bool) {
		cs, err := ParseGatewayFile("fuzz", data, yaml)
		if err != nil {
			return
		}
		names, hashes := map[string]bool{}, map[[32]byte]bool{}
		for _, c := range cs {
			if !validClientName(c.Name) || names[c.Name] || hashes[c.TokenSHA256] || c.TokenSHA256 == unknownHash || c.Task == "" {
				t.Fatalf("accepted %+v", cs)
			}
			names[c.Name], hashes[c.TokenSHA256] = true, true
		}
	})
}

// FuzzProxyAuthorization: checkHeader accepts exactly the one header
// that is Basic of a client's name and token, and its refusals never
// show the token.
func FuzzProxyAuthorization(f *testing.F) {
	const token = "s3cret-token-of-a"
	sum := sha256.Sum256([]byte(token))
	cs := &clients{byName: map[string]*tenant{"sandbox-a": {client: Client{Name: "sandbox-a", TokenSHA256: sum}}}, now: time.Now}
	good := "Basic " + base64.StdEncoding.EncodeToString([]byte("sandbox-a:"+token))
	f.Add(good)
	f.Add("basic " + base64.StdEncoding.EncodeToString([]byte("sandbox-a:"+token)))
	f.Add("Basic " + base64.StdEncoding.EncodeToString([]byte(token+":x")))
	f.Add("Basic " + base64.RawStdEncoding.EncodeToString([]byte("sandbox-a:"+token+"x")))
	f.Add("Bearer " + token)
	f.Fuzz(func(t *testing.T, v string) {
		tn, why := cs.checkHeader(http.Header{"Proxy-Authorization": {v}})
		if tn != nil {
			scheme, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
			b, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(cred))
			if !strings.EqualFold(scheme, "basic") || err != nil || string(b) != "sandbox-a:"+token {
				t.Fatalf("accepted %q", v)
			}
			return
		}
		if strings.Contains(why, token) {
			t.Fatalf("refusal shows the token: %s", why)
		}
	})
}

// FuzzSOCKSUserPass: the RFC 1929 reader never panics and reads exactly
// the message it parses.
func FuzzSOCKSUserPass(f *testing.F) {
	f.Add([]byte{1, 1, 'a', 2, 'p', 'w'})
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{5, 1, 'a', 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := strings.NewReader(string(data))
		user, pass, err := readUserPass(r)
		if err != nil {
			return
		}
		if n := len(data) - r.Len(); n != 3+len(user)+len(pass) || user == "" {
			t.Fatalf("% x: read %d bytes for %q, %q", data, n, user, pass)
		}
	})
}
