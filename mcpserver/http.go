package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MinTokenLen is the shortest bearer token Handler takes.
const MinTokenLen = 32

// Handler serves the streamable HTTP transport: one MCP session per
// client, each with sandbox sessions of its own. Every request must carry
// "Authorization: Bearer " and token (compared in constant time), else it
// is answered 401; one whose Origin is not the server's own, or that a
// browser marks cross-site, is answered 403; and the SDK's DNS-rebinding
// protection answers 403 to a request that reached a loopback address
// under another host name. An HTTP session with no request for the
// policy's idle timeout ends, and its sandbox session with it; past
// Config.MaxClients sessions held at once, a request that would open one
// more is answered 503 (boundClients).
func (s *Server) Handler(token string) (http.Handler, error) {
	if len(token) < MinTokenLen {
		return nil, fmt.Errorf("mcpserver: the bearer token must be at least %d bytes", MinTokenLen)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{SessionTimeout: s.caps.Idle()})
	want := []byte(token)
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "airlock mcp bearer"}, nil
	}
	authed := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(s.boundClients(h))
	return closeUnauthorized(want, sameOrigin(http.NewCrossOriginProtection().Handler(authed))), nil
}

// sessionHeader is the streamable transport's session id header: a POST
// without it opens a new MCP session (an initialize), one with it goes to
// its session.
const sessionHeader = "Mcp-Session-Id"

// boundClients holds one of Config.MaxClients places for every MCP
// session the SDK's handler next keeps, from the request that opens it
// until it ends (a DELETE, the idle timeout, Close). Each costs the server
// memory until then, an initialized session that never called a tool as
// much as another: without a bound, a client holding the token that opened
// sessions in a loop grew the server without end (3,000 took 90 MiB). A
// request that would open one more is answered 503 with a JSON-RPC error
// that says why, and opens nothing.
func (s *Server) boundClients(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(sessionHeader); id != "" || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			if r.Method == http.MethodDelete {
				s.awaitSlot(r, id)
			}
			return
		}
		select {
		case s.slots <- struct{}{}:
		default:
			refuseClient(w, cap(s.slots))
			return
		}
		next.ServeHTTP(w, r)
		s.holdSlot(w.Header().Get(sessionHeader))
	})
}

// holdSlot keeps the place just taken until MCP session id ends; one
// that was not kept (a failed initialize, another request) gives it back
// at once.
func (s *Server) holdSlot(id string) {
	if id != "" {
		for ss := range s.mcp.Sessions() {
			if ss.ID() == id {
				freed := make(chan struct{})
				s.mu.Lock()
				s.held[id] = freed
				s.mu.Unlock()
				go func() {
					_ = ss.Wait()
					s.mu.Lock()
					delete(s.held, id)
					s.mu.Unlock()
					<-s.slots
					close(freed)
				}()
				return
			}
		}
	}
	<-s.slots
}

// freed returns a channel closed when MCP session id's place is given
// back, or nil when it holds none.
func (s *Server) freed(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[id]
}

// awaitSlot answers a DELETE of MCP session id only once its place is
// given back, so that a client that ends a session and opens another at
// once is not refused for the one it ended; a client that goes away
// stops the wait.
func (s *Server) awaitSlot(r *http.Request, id string) {
	if ch := s.freed(id); ch != nil {
		select {
		case <-ch:
		case <-r.Context().Done():
		}
	}
}

// refuseClient answers a request for one MCP session more than n: 503,
// and a JSON-RPC error a client can show.
func refuseClient(w http.ResponseWriter, n int) {
	msg := fmt.Sprintf("airlock: %d MCP sessions are open, as many as this server holds (--max-clients): "+
		"end one (DELETE) or wait for one to pass the idle timeout, then try again", n)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32000, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(body)
}

// closeUnauthorized ends the connection of a request without the token
// once it is answered (401, or 403 for its origin): a client that does not
// hold the token keeps no connection open. Kept alive, as HTTP/1.1 keeps
// every connection by default and no idle timeout ended them, any local
// process could hold as many as it liked and leave the server without
// descriptors for its clients.
func closeUnauthorized(want []byte, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin answers 403 to a request whose Origin header names another
// origin than the one it was sent to, whatever its method (the standard
// library's cross-origin protection leaves GET alone).
func sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host != r.Host || (u.Scheme != "http" && u.Scheme != "https") {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Listen listens on TCP address addr, which must be a loopback address
// (an IP of 127.0.0.0/8 or ::1, or "localhost", which means 127.0.0.1)
// unless remote says otherwise: an MCP server that runs commands is for
// the clients of this host.
func Listen(addr string, remote bool) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if !remote && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("mcpserver: listen address %q is not a loopback address: airlock mcp serves this host's clients only "+
			"(use 127.0.0.1:PORT; --allow-remote serves other hosts too, with the bearer token their only guard)", addr)
	}
	return net.Listen("tcp", net.JoinHostPort(host, port))
}

// NewToken returns a fresh bearer token: 32 random bytes, base64url.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// WriteToken writes token to the file path, mode 0600: to a new file in
// the same directory, renamed over path, so the token is never in a file
// another user could read, and a link at path is replaced, not followed.
func WriteToken(path, token string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".airlock-token-*")
	if err != nil {
		return fmt.Errorf("mcpserver: token file: %w", err)
	}
	_, err = f.WriteString(token + "\n")
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("mcpserver: token file %s: %w", path, err)
	}
	return nil
}
