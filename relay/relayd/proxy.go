package relayd

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	pathpkg "path"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/store"
	"github.com/trycua/cua-spacesd/relay/tunnel"
)

// Pooling of relayed streams, per (session, person).
const (
	// maxIdleStreams is how many idle streams a person keeps open to one
	// computer for the next request.
	maxIdleStreams = 8
	// idleStreamTimeout closes a pooled stream nobody used for this long.
	idleStreamTimeout = 90 * time.Second
	// maxResponseHeaderBytes bounds a daemon's answer's header.
	maxResponseHeaderBytes = 1 << 20
)

// handleProxy is /c/<computer>/<daemon path> with a user token: the
// caller must own the computer or have a share of it (404 otherwise, the
// same as for no such computer); the request goes to the Space on a stream
// with a grant of the caller and their role, its Authorization stripped.
func (s *Server) handleProxy(w http.ResponseWriter, r *http.Request, u store.User) {
	name, path, rawPath, err := splitComputerPath(r.URL.EscapedPath())
	if err != nil {
		writeError(w, err)
		return
	}
	comp, err := s.cfg.Store.Computer(r.Context(), name)
	role := protocol.RoleOwner
	if err == nil && comp.Owner != u.ID {
		// A share's role, read on each request: an unshare refuses the
		// next one.
		role, err = s.cfg.Store.RoleOf(r.Context(), name, u.ID)
	}
	if err != nil || role == "" {
		if err != nil && api.KindOf(err) != api.KindNotFound && api.KindOf(err) != api.KindInvalidArgument {
			writeError(w, err)
			return
		}
		// Never tell another user's computer apart from none.
		writeError(w, api.Errorf(api.KindNotFound, "computer %q: not found among yours or shared with you", name))
		return
	}
	f := forwarding{ss: s.session(name), name: name, path: path, rawPath: rawPath, route: classifyLink(r.Method, path),
		caller: caller{id: u.ID, name: u.Name, role: role}}
	if f.ss == nil {
		// Attached to another node of the cluster, or offline.
		if f.rem = s.remoteFor(r.Context(), name); f.rem == nil {
			writeError(w, offline(name))
			return
		}
	}
	s.forward(w, r, f)
}

// caller is whom a stream's grant names.
type caller struct {
	id, name string
	role     protocol.Role
}

func (c caller) link() bool { return c.role == protocol.RoleLink }

// forwarding is one request on its way to a Space: attached here (ss), or
// to another node (rem).
type forwarding struct {
	ss                  *session
	rem                 *remote
	name, path, rawPath string
	route               linkRoute
	caller              caller
	// keepAuth keeps the Authorization header (a media ticket, which the
	// Space checks); otherwise it is the relay's own and is dropped.
	keepAuth bool
}

// forward sends r to the Space of f and its answer back. A WHEP offer goes
// on a fresh stream of its own whose grant carries the Space's TURN
// credential for this view; an answer of the ICE route gets the relay's
// TURN server added for the viewer.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, f forwarding) {
	var rt http.RoundTripper
	bulk := isBulk(r.Method, f.path, r.Header.Get("Content-Type"))
	switch {
	case f.route == linkOffer && f.rem != nil:
		t := f.rem.offerTransport(f.caller)
		defer t.CloseIdleConnections()
		rt = t
	case f.route == linkOffer:
		t := f.ss.offerTransport(f.caller, s.turnCredential(f.name, "space"))
		defer t.CloseIdleConnections()
		rt = t
	case f.rem != nil:
		rt = f.rem.transport(f.caller, bulk)
	default:
		rt = f.ss.transport(f.caller, bulk)
	}
	name := f.name
	rp := &httputil.ReverseProxy{
		Transport:     rt,
		FlushInterval: -1, // answers stream (exec output, downloads)
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = name
			pr.Out.URL.Path, pr.Out.URL.RawPath = f.path, f.rawPath
			pr.Out.Host = pr.In.Host
			// The user token authenticates to the relay only; the grant
			// in the stream's header is the Space's credential. A media
			// ticket is the Space's own, and stays.
			if !f.keepAuth {
				pr.Out.Header.Del("Authorization")
			}
			pr.Out.Header.Del("X-API-Key")
			if f.caller.link() {
				// Every computer's pages share the relay's origin: no
				// cookie of one reaches another's Space.
				pr.Out.Header.Del("Cookie")
			}
			pr.SetXForwarded()
		},
		ModifyResponse: func(resp *http.Response) error {
			if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") {
				resp.Header.Set("Location", relayapi.PrefixComputer+name+loc)
			}
			if f.caller.link() {
				resp.Header.Del("Set-Cookie")
			}
			if f.route == linkICE && resp.StatusCode == http.StatusOK {
				// No host to name (an HTTP/1.0 request without Host, and
				// a credential without one): the Space's answer as it is.
				if cred, host := s.turnCredential(name, "viewer"), requestHost(r.Host); cred != nil && (cred.Host != "" || host != "") {
					return addTURN(resp, cred, host)
				}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				return // the caller left
			}
			var ae *api.Error
			if errors.As(err, &ae) {
				writeError(w, ae)
				return
			}
			writeError(w, api.Errorf(api.KindRelay, "computer %q: %v", name, err))
		},
		ErrorLog: s.proxyLog,
	}
	rp.ServeHTTP(w, r)
}

// splitComputerPath splits /c/<computer>/<daemon path> (escaped, as on the
// wire) into the computer's name and the daemon path, unescaped and as
// sent. The name is not checked here (the store's lookup does).
func splitComputerPath(escaped string) (name, path, rawPath string, err error) {
	rest, ok := strings.CutPrefix(escaped, relayapi.PrefixComputer)
	if !ok {
		return "", "", "", api.Errorf(api.KindNotFound, "path %.200q: not under %s", escaped, relayapi.PrefixComputer)
	}
	name, rawPath, _ = strings.Cut(rest, "/")
	rawPath = "/" + rawPath
	if name, err = url.PathUnescape(name); err != nil {
		return "", "", "", api.Errorf(api.KindInvalidArgument, "computer name in %.200q: %v", escaped, err)
	}
	if path, err = url.PathUnescape(rawPath); err != nil {
		return "", "", "", api.Errorf(api.KindInvalidArgument, "path %.200q: %v", rawPath, err)
	}
	return name, path, rawPath, nil
}

// filesPrefix is where the files routes live ("/v1/files/").
var filesPrefix = pathpkg.Dir(api.PathFileContent) + "/"

// isBulk reports whether a request's bytes go over a data connection of
// their own: file content read or written, and upload chunks (DESIGN §4: a
// keystroke never queues behind a download).
func isBulk(method, path, contentType string) bool {
	switch {
	case path == api.PathFileContent && (method == http.MethodGet || method == http.MethodPut):
		return true
	case method == http.MethodPut && strings.HasPrefix(path, api.PathUploads+"/") &&
		!strings.Contains(strings.TrimPrefix(path, api.PathUploads+"/"), "/"):
		return true
	case strings.HasPrefix(path, filesPrefix) && strings.HasPrefix(contentType, "application/octet-stream"):
		return true
	}
	return false
}

// transport is the pool of c's streams to this session (bulk: one data
// connection per exchange, never pooled).
func (ss *session) transport(c caller, bulk bool) http.RoundTripper {
	// A user id is printable ASCII: no NUL, so no key of a user's is
	// another's, nor the link holders'.
	// The role is in the key: a share's new role gets new streams, whose
	// grants carry it.
	key := c.id + "\x00" + string(c.role)
	if c.link() {
		key = "\x00link"
	}
	if bulk {
		key += "\x00bulk"
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.transports == nil {
		select {
		case <-ss.done:
			return errTransport{api.Errorf(api.KindRelay, "computer %q: its session ended", ss.comp.Name)}
		default:
		}
		ss.transports = map[string]*http.Transport{}
	}
	if t := ss.transports[key]; t != nil {
		return t
	}
	t := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if bulk {
				return ss.openData(ctx, c)
			}
			return ss.openStream(c, nil)
		},
		DisableKeepAlives:      bulk,
		MaxIdleConnsPerHost:    maxIdleStreams,
		IdleConnTimeout:        idleStreamTimeout,
		DisableCompression:     true,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
	}
	if bulk {
		t.ReadBufferSize, t.WriteBufferSize = dataBufferSize, dataBufferSize
	}
	ss.transports[key] = t
	return t
}

// offerTransport carries one WHEP offer on a stream of its own, never
// pooled: its grant carries turn, the Space's TURN credential for this one
// view (nil: the relay runs no TURN server).
func (ss *session) offerTransport(c caller, turn *protocol.TurnCredential) *http.Transport {
	return &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			return ss.openStream(c, turn)
		},
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
	}
}

// turnCredential mints a TURN credential for who ("space" or "viewer") of
// one view of computer, or nil when the relay runs no TURN server.
func (s *Server) turnCredential(computer, who string) *protocol.TurnCredential {
	if s.cfg.TURN == nil {
		return nil
	}
	c := s.cfg.TURN.Credential(computer, who)
	return &c
}

type errTransport struct{ err error }

func (e errTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, e.err }

// pendingData is a data connection asked for with OpenData and not yet
// dialled.
type pendingData struct {
	computer string
	hash     [32]byte
	ch       chan *tunnel.WSConn // unbuffered: handed over, or refused
	gone     chan struct{}       // closed when the asker stopped waiting
}

// openData asks the Space for a data connection (OpenData on the control
// stream), waits for its dial (DataDialTimeout), and writes the stream
// header on it: one exchange then runs over it, and it is closed.
func (ss *session) openData(ctx context.Context, c caller) (net.Conn, error) {
	s := ss.srv
	tok, err := protocol.NewToken(protocol.TokenData)
	if err != nil {
		return nil, err
	}
	pd := &pendingData{computer: ss.comp.Name, hash: protocol.HashToken(tok), ch: make(chan *tunnel.WSConn), gone: make(chan struct{})}
	s.mu.Lock()
	if len(s.pending) >= MaxPendingData {
		s.mu.Unlock()
		return nil, api.Errorf(api.KindLimitExceeded, "the relay waits for %d data connections already; retry", MaxPendingData)
	}
	s.pending[pd.hash] = pd
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, pd.hash)
		s.mu.Unlock()
		close(pd.gone)
	}()
	if err := ss.ctrl.WriteMessage(protocol.OpenData{Token: tok, Path: relayapi.PathData}); err != nil {
		return nil, api.Errorf(api.KindRelay, "computer %q: ask for a data connection: %w", ss.comp.Name, err)
	}
	t := time.NewTimer(DataDialTimeout)
	defer t.Stop()
	select {
	case conn := <-pd.ch:
		s.metrics.DataConns.Add(1)
		cc := &countedConn{Conn: conn, release: func() {}}
		ss.track(cc, c)
		if err := ss.writeHeader(cc, c, nil); err != nil {
			_ = cc.Close()
			return nil, err
		}
		return cc, nil
	case <-t.C:
		return nil, api.Errorf(api.KindRelay, "computer %q did not open a data connection within %s", ss.comp.Name, DataDialTimeout)
	case <-ss.done:
		return nil, api.Errorf(api.KindRelay, "computer %q: its session ended", ss.comp.Name)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// handleData is GET /v1/data: a Space's data connection, its bearer the
// one-time data token of an OpenData.
func (s *Server) handleData(w http.ResponseWriter, r *http.Request) {
	tok := bearer(r)
	if k, err := protocol.ParseToken(tok); err != nil || k != protocol.TokenData {
		s.refuse(w, r, api.Errorf(api.KindUnauthenticated, "data connection: not a data token").WithReason(protocol.CloseTokenInvalid.String()))
		return
	}
	h := protocol.HashToken(tok)
	s.mu.Lock()
	pd := s.pending[h]
	if pd != nil {
		delete(s.pending, h) // one-time
	}
	s.mu.Unlock()
	if pd == nil || !protocol.TokenEqual(pd.hash, tok) {
		s.refuse(w, r, api.Errorf(api.KindUnauthenticated, "data connection: unknown or used data token").WithReason(protocol.CloseTokenInvalid.String()))
		return
	}
	ws, err := s.dataUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := tunnel.NewBulkWSConn(ws)
	select {
	case pd.ch <- c:
	case <-pd.gone:
		_ = c.CloseWith(int(protocol.CloseNormal), "nobody waits for this data connection")
	}
}
