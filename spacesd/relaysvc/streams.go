package relaysvc

import (
	"crypto/ed25519"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// relayVia is what a relayed stream's viewers need of the session it
// came by: the relay's host (a TURN credential's default host: its TURN
// runs beside its HTTPS) and how the relay's certificate is trusted.
type relayVia struct {
	host string
	tls  *tls.Config
}

func (s *session) via() relayVia {
	v := relayVia{tls: s.tls}
	if u, err := checkRelayURL(s.url); err == nil {
		v.host = u.Hostname()
	}
	return v
}

// serveStream reads a relayed stream's header within protocol.HeaderTimeout,
// checks its grant with the pinned key, and serves the stream as the
// grant's person; on any failure it closes the stream, nothing served.
func (a *attacher) serveStream(c net.Conn, key ed25519.PublicKey, computer string, version int, via relayVia) {
	_ = c.SetReadDeadline(time.Now().Add(protocol.HeaderTimeout))
	h, err := protocol.ReadHeader(c)
	if err == nil && h.Version != version {
		err = protocol.CloseProtocolError.Err(fmt.Sprintf("stream header of version %d in a session of version %d", h.Version, version))
	}
	if err != nil {
		a.log.Warn("relay: stream refused: bad header", "err", err)
		count(a.refused)
		_ = c.Close()
		return
	}
	g, err := protocol.VerifyGrant(key, h.Grant, computer, a.o.Now())
	if err != nil {
		a.log.Warn("relay: stream refused: grant", "err", err)
		count(a.refused)
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	count(a.streams)
	sc := &streamConn{Conn: c, a: a, person: g.Person, role: g.Role}
	if !a.track(sc) {
		_ = c.Close()
		return
	}
	p := server.Principal{Person: g.Person, PersonName: g.PersonName, Role: server.Role(g.Role), Grant: g.ID, Via: server.ViaRelay}
	if g.Turn != nil {
		// The Space's end of one view's TURN (the grant of the stream
		// that carries the viewer's offer). Its TLS is trusted as the
		// relay's HTTPS is: the same relay, the same certificate.
		p.ICEServers, p.TURNTLS = g.Turn.ICEServers(via.host), via.tls
	}
	if err := a.serve(sc, p); err != nil {
		a.log.Debug("relay: stream not served", "err", err)
	}
}

// streamConn is a relayed connection the attacher tracks, to close a
// kicked person's and every one at a detach.
type streamConn struct {
	net.Conn
	a      *attacher
	person string
	role   protocol.Role
	once   sync.Once
	closed atomic.Bool
}

// Close ends the connection both ways. A yamux stream's Close is a half
// close (the peer may still write, and a Read still reads): a kicked
// person's next request must not be read, let alone served, so reads end
// here too, a blocked one at once (a deadline in the past).
func (c *streamConn) Close() error {
	c.once.Do(func() {
		c.closed.Store(true)
		_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
		c.a.mu.Lock()
		delete(c.a.conns, c)
		c.a.mu.Unlock()
	})
	return c.Conn.Close()
}

func (c *streamConn) Read(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p)
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	return n, err
}

// SetReadDeadline leaves a closed connection's past deadline alone.
func (c *streamConn) SetReadDeadline(t time.Time) error {
	if c.closed.Load() {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *streamConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// track adds c, unless detached meanwhile.
func (a *attacher) track(c *streamConn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.att == nil {
		return false
	}
	a.conns[c] = struct{}{}
	return true
}

// kick closes every connection of person (protocol.KickAll: of every
// person but the owners), and ends what they hold past them (streams
// opened on those connections or with tickets they minted), and answers
// how many of each. Connections first: a kicked person's next request
// must not be read while its streams are ended.
func (a *attacher) kick(person string) (conns, held int) {
	match := func(p string, role string) bool {
		if person == protocol.KickAll {
			return role != string(protocol.RoleOwner)
		}
		return p == person
	}
	conns = a.closeConns(func(c *streamConn) bool { return match(c.person, string(c.role)) })
	if a.held != nil {
		held = a.held(func(p string, role server.Role) bool { return match(p, string(role)) })
	}
	return conns, held
}

func (a *attacher) closeConns(match func(*streamConn) bool) int {
	a.mu.Lock()
	var out []*streamConn
	for c := range a.conns {
		if match(c) {
			out = append(out, c)
		}
	}
	a.mu.Unlock()
	for _, c := range out {
		_ = c.Close()
	}
	return len(out)
}

// connsOf counts the tracked connections of person (tests).
func (a *attacher) connsOf(person string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for c := range a.conns {
		if c.person == person {
			n++
		}
	}
	return n
}
