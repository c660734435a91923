package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
)

// tap records what is read through it, so that what a parser has
// consumed can be passed on exactly as the client sent it.
type tap struct {
	r       io.Reader
	pending []byte // read, not passed on yet
	limit   int64  // bytes the current request's head may still take; <0: no limit
}

func (t *tap) Read(b []byte) (int, error) {
	if t.limit == 0 {
		return 0, errHeadTooLarge
	}
	if t.limit > 0 && int64(len(b)) > t.limit {
		b = b[:t.limit]
	}
	n, err := t.r.Read(b)
	t.pending = append(t.pending, b[:n]...)
	if t.limit > 0 {
		t.limit -= int64(n)
	}
	return n, err
}

// errHeadTooLarge is a request head past the proxy's header limit.
var errHeadTooLarge = errors.New("request header too large")

// relayRequests passes plain HTTP requests from the client to up one by
// one: each is parsed (net/http's parser, strict about framing), its host
// checked against the tunnel's, and then passed on as the very bytes that
// were parsed, head first and its body as it is read, so that the server
// sees what was checked and nothing of a request not yet checked (a
// pipelined request is checked before a byte of it goes up). Responses
// flow back unparsed. After a request asking to upgrade the connection,
// the rest is passed on unparsed: it is no longer HTTP.
func (p *Proxy) relayRequests(ev *Event, up, client net.Conn, first []byte, abort func(error)) int64 {
	t := &tap{r: io.MultiReader(bytes.NewReader(first), client)}
	br := bufio.NewReaderSize(t, 4096)
	var n int64
	flush := func() error {
		k := len(t.pending) - br.Buffered()
		w, err := send(ev.use, up, t.pending[:k], true)
		n += w
		t.pending = append(t.pending[:0], t.pending[k:]...)
		return err
	}
	for {
		t.limit = int64(p.limits.MaxHeaderBytes) + 4096
		req, err := http.ReadRequest(br)
		t.limit = -1
		if err != nil {
			switch {
			case errors.Is(err, io.EOF) && len(t.pending) == 0:
				err = closeWrite(up)
			case isGone(err):
			default:
				reason := "request in the tunnel to " + ev.Target.String() + " refused: it is not well-formed HTTP (" + err.Error() + ")"
				p.refused(ev, reason)
				refuseTunnel(client, firstHTTP, reason)
				err = errTunnelRefused
			}
			abort(ignoreClosed(err))
			return n
		}
		if why := hostMismatch(ev.Target, req.Host); why != "" {
			p.refused(ev, why)
			if n == 0 { // nothing went up, so nothing comes back: answer it
				refuseTunnel(client, firstHTTP, why)
				abort(errTunnelRefused)
				return n
			}
			// Nothing of it goes up; the answers to the requests before
			// it still come back, then the tunnel ends.
			if err := closeWrite(up); err != nil {
				abort(ignoreClosed(err))
			}
			return n
		}
		if err := flush(); err != nil {
			abort(ignoreClosed(err))
			return n
		}
		buf := make([]byte, 32<<10)
		for {
			_, rerr := req.Body.Read(buf)
			if err := flush(); err != nil {
				abort(ignoreClosed(err))
				return n
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				abort(ignoreClosed(rerr))
				return n
			}
		}
		if req.Header.Get("Upgrade") != "" {
			// What was read ahead of the parser goes first, then the rest.
			w, err := send(ev.use, up, t.pending, true)
			n += w
			if err != nil {
				abort(ignoreClosed(err))
				return n
			}
			return n + p.pass(up, client, ev.use, true, abort)
		}
	}
}
