package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// A Role is what a Principal may do. RoleOwner may call every route; a
// route lists the other roles it admits (Route.Roles), so sharing adds
// viewer and editor as a route-level check on this same seam.
type Role string

// The roles a relay grant may carry (relay/protocol spells the same words).
const (
	RoleOwner  Role = "owner"
	RoleEditor Role = "editor"
	RoleViewer Role = "viewer"
	// RoleLink is a media link's holder through the relay: no one the
	// relay knows. Its requests are authorised as on the daemon's own
	// port by the stream ticket they carry (never by a token), so it
	// reaches only the public and ticket routes.
	RoleLink Role = "link"
)

// ViewerRoles is Route.Roles of a route a viewer may call (and an
// editor): reads of what is on the screen, and view-only streams. A
// fresh slice each call: a route table cannot widen another's.
func ViewerRoles() []Role { return []Role{RoleEditor, RoleViewer} }

// EditorRoles is Route.Roles of a route an editor may call: full use of
// the Space. Routes without Roles are the owner's alone: who may reach
// the Space (relay attach and detach) and the token, and any route whose
// author has not decided (a test in spacesd/daemon lists every route's
// roles, so a new route fails it until someone does).
func EditorRoles() []Role { return []Role{RoleEditor} }

// ViaRelay is Principal.Via of a caller reached through cua-relay.
const ViaRelay = "relay"

// A Principal is a caller that its connection brings, not a credential on
// each request: the person a relay grant names, checked by the service
// that accepted the connection (Host.ServeConn) before the server sees it.
type Principal struct {
	// Person is a stable id (the relay's user id); PersonName is for logs.
	Person     string
	PersonName string
	Role       Role
	// Grant names the grant that opened the connection.
	Grant string
	// Via names the way the connection came (ViaRelay).
	Via string
	// ICEServers are the TURN servers (with this connection's own
	// credential) a viewer opened on this connection gathers relayed
	// candidates with: the relay's, for this one view.
	ICEServers []api.ICEServer
	// TURNTLS verifies the turns: servers of ICEServers as the service
	// that brought the connection verifies the relay (its pin or CA);
	// nil: the system's roots.
	TURNTLS *tls.Config
}

// errNoPrincipal refuses a ServeConn without someone to serve.
var errNoPrincipal = errors.New("server: ServeConn needs a principal with a person and a role")

// principalConn is a connection whose caller is its principal. The
// http.Server that serves the listener serves it too, outside the
// connection tracker: it is neither anonymous nor bounded by the
// listener's caps (the service that hands it over bounds its own).
type principalConn struct {
	net.Conn
	p Principal
	// gen is the token generation when the connection was handed over:
	// a rotation ends the connection and every request on it.
	gen       uint64
	closeOnce sync.Once
	release   func()
	closeErr  error
}

func (c *principalConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.Conn.Close()
		c.release()
	})
	return c.closeErr
}

// connListener is the listener of the connections handed over by
// ServeConn: the same http.Server serves it as the TCP listener, so the
// graceful shutdown drains relayed requests and the hard stop closes them.
type connListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnListener() *connListener {
	return &connListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return relayAddr{} }

type relayAddr struct{}

func (relayAddr) Network() string { return "relay" }
func (relayAddr) String() string  { return "relay" }

// ServeConn serves HTTP/1.1 on c as calls of p, until c closes, a
// rotation of the token ends it, or the server stops. It returns once
// the server took c (it blocks while Serve has not started), or with
// ErrShutdown, c closed, when the server has stopped. c's Close must end
// it both ways (a multiplexed stream whose Close is a half close must stop
// reading too), or a rotation would leave its next request served.
func (s *Server) ServeConn(c net.Conn, p Principal) error {
	if p.Person == "" || p.Role == "" {
		_ = c.Close()
		return errNoPrincipal
	}
	gen := s.auth.Generation()
	ctx, end := s.auth.Session(context.Background(), gen)
	pc := &principalConn{Conn: c, p: p, gen: gen}
	stop := context.AfterFunc(ctx, func() { _ = pc.Close() })
	pc.release = func() { stop(); end(nil) }
	select {
	case s.relayed.ch <- pc:
		return nil
	case <-s.relayed.done:
		_ = pc.Close()
		return ErrShutdown
	}
}

// principalKey is the context key of a relayed request's connection.
type principalKey struct{}

// relayedConn is the principal connection a request came on, if any.
func relayedConn(ctx context.Context) (*principalConn, bool) {
	pc, ok := ctx.Value(principalKey{}).(*principalConn)
	return pc, ok
}

// authorizeRelayed finds the caller of a request on a principal's
// connection: the principal, whatever the request carries. A bearer token
// or ticket on it is ignored, neither widening nor narrowing what the
// principal may do (the relay strips the caller's Authorization; a
// header that reaches us anyway proves nothing about who sent it). A
// link's connection is the exception: its grant names no one, so its
// requests are authorised by their ticket (authorizeLink).
func (s *Server) authorizeRelayed(r *http.Request, pc *principalConn, rt Route) (Caller, error) {
	p := pc.p
	if !s.auth.Valid(pc.gen) {
		// The rotation closes the connection too, but after it returns:
		// a request that came first must not be served as the old token's.
		return Caller{}, api.Errorf(api.KindUnauthenticated, "%v", ErrTokenRotated).WithCause(ErrTokenRotated)
	}
	if p.Role == RoleLink {
		return s.authorizeLink(r, pc, rt)
	}
	if !permits(rt, p.Role) {
		// The daemon's own check (the relay checks first): a refusal
		// here is a relay that let someone through, or a probe.
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "permission denied", slog.String("person", p.Person),
			slog.String("person_name", p.PersonName), slog.String("role", string(p.Role)),
			slog.String("route", rt.Method+" "+rt.Path), slog.String("grant", p.Grant))
		return Caller{}, api.Errorf(api.KindPermissionDenied, "%s %s: the role %s may not call this route", rt.Method, rt.Path, p.Role).
			WithHint("a viewer may read capabilities, list windows, take screenshots and watch a view-only stream; an editor all but attach and detach; ask the Space's owner for a role that may")
	}
	return Caller{Generation: pc.gen, Principal: &p}, nil
}

// errLinkNeedsTicket refuses a link's request that shows no ticket: a
// token, or nothing. The relay forwards a link's requests with the ticket
// its holder sent; a token there is someone's mistake or a probe, and is
// never checked (a link must not become a way to guess the token).
var errLinkNeedsTicket = api.Errorf(api.KindUnauthenticated, "a media link's request through the relay needs its stream ticket (Authorization: Bearer cuat1...); tokens are not taken on it").
	WithHint("open the link the Space's owner shared, or mint a new ticket (POST /v1/stream/tickets)")

// authorizeLink authorises a request on a link's connection (RoleLink):
// as a ticket on the daemon's own port would be (signature, expiry, token
// epoch, the route's scope), never by a token. Only routes with a ticket
// scope are reached this way; the public ones need no caller at all. The
// caller is the ticket's, which the route's service enforces as it does
// on its own port, with the principal beside it for what the connection
// brings (its ICE servers).
func (s *Server) authorizeLink(r *http.Request, pc *principalConn, rt Route) (Caller, error) {
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	bearer = strings.TrimSpace(bearer)
	if !ok || !IsTicket(bearer) {
		return Caller{}, errLinkNeedsTicket
	}
	if rt.Ticket == "" {
		return Caller{}, errTicketScope
	}
	t, gen, err := s.auth.verifyTicket(bearer, time.Now())
	if err == nil {
		err = s.checkKicked(t)
	}
	if err != nil {
		return Caller{}, err
	}
	if t.Scope != rt.Ticket {
		return Caller{}, errTicketScope
	}
	if gen != pc.gen {
		// Rotated between the connection's handover and this request:
		// the connection ends with the rotation anyway.
		return Caller{}, errRotatedTicket
	}
	p := pc.p
	return Caller{Generation: gen, Ticket: &t, Principal: &p}, nil
}

// permits reports whether role may call rt: the owner every route, any
// other role the routes that list it.
func permits(rt Route, role Role) bool {
	return role == RoleOwner || slices.Contains(rt.Roles, role)
}

// forwardedOrigin is the scheme and host a browser used to reach a
// relayed request: the relay's, which it tells in X-Forwarded-Proto and
// X-Forwarded-Host. Only a principal's connection may tell them: on the
// listener anyone could.
func forwardedOrigin(r *http.Request) (host string, tls bool) {
	host = r.Header.Get("X-Forwarded-Host")
	if host == "" {
		host = r.Host
	}
	proto := r.Header.Get("X-Forwarded-Proto")
	return host, proto == "https" || proto == "wss"
}
