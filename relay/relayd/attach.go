package relayd

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/mesh"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/store"
	"github.com/trycua/cua-spacesd/relay/tunnel"
)

// closeFrameTimeout bounds the Close frame a session's end writes: a Space
// that stopped reading must not hold the end of its session.
const closeFrameTimeout = time.Second

// session is one attached Space: its control session and what it needs to
// open streams to it. It is kept small on purpose (no buffers of its own):
// an idle session is yamux's goroutines, the control loop's, and a few
// hundred bytes here.
type session struct {
	srv     *Server
	comp    store.Computer
	version int
	since   time.Time
	daemon  string
	ws      *tunnel.WSConn
	mux     *yamux.Session
	ctrl    *protocol.Writer
	ctrlSt  *yamux.Stream
	log     *slog.Logger
	streams atomic.Int32
	// linkStreams and links bound the link holders' forwards (links.go).
	linkStreams atomic.Int32
	links       tokenBucket
	nonce       atomic.Uint64
	ping        *time.Timer

	endOnce sync.Once
	done    chan struct{}
	// unannounce takes the computer out of the cluster's directory
	// (nodes.go); nil on a single node.
	unannounce func()

	mu         sync.Mutex
	transports map[string]*http.Transport // by person, role (and bulk or not)
	open       map[*countedConn]struct{}  // streams open now, with their person (people.go)
	people     map[string]int             // open streams by person and role, shared ones only
}

// handleAttach is GET /v1/attach: the computer token is checked before the
// upgrade (401 with the reason otherwise); then yamux over the WebSocket,
// Hello, Welcome, and the control loop in this goroutine until the
// session ends.
func (s *Server) handleAttach(w http.ResponseWriter, r *http.Request) {
	tok := bearer(r)
	if tok == "" {
		s.refuse(w, r, api.Errorf(api.KindUnauthenticated, "no computer token: send Authorization: Bearer cuac_...").WithReason(protocol.CloseTokenInvalid.String()))
		return
	}
	comp, err := s.cfg.Store.ComputerByToken(r.Context(), tok)
	if err != nil {
		if api.KindOf(err) == api.KindUnauthenticated {
			s.refuse(w, r, err)
			return
		}
		writeError(w, err)
		return
	}
	s.mu.Lock()
	closing, full := s.closing, len(s.sessions) >= s.cfg.Limits.MaxSessions && s.sessions[comp.Name] == nil
	s.mu.Unlock()
	retry, draining := s.draining()
	switch {
	case closing:
		unavailable(w, GoAwayRetryAfter, protocol.CloseGoingAway, "the relay is shutting down; attach again in a moment")
		return
	case draining:
		unavailable(w, retry, protocol.CloseGoingAway, "this relay node is draining; attach to another node of the relay")
		return
	case full:
		s.metrics.SessionsRefused.Add(1)
		unavailable(w, 30*time.Second, protocol.CloseTooManySessions, "the relay holds its %d sessions; try again later, or another node", s.cfg.Limits.MaxSessions)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	conn := tunnel.NewWSConn(ws)
	log := s.log.With("computer", comp.Name, "remote", r.RemoteAddr)
	ycfg := tunnel.Config(log)
	// The control stream's heartbeats find a dead Space; yamux's own
	// keepalive would be one more goroutine per idle session (the Space's
	// keepalive pings are still answered).
	ycfg.EnableKeepAlive = false
	mux, err := yamux.Server(conn, ycfg)
	if err != nil {
		_ = conn.CloseWith(int(protocol.CloseInternalError), "yamux")
		return
	}
	ss, welcome, err := s.handshake(comp, conn, mux, log)
	if err != nil {
		log.Info("attach refused", "err", err, "code", protocol.CloseCodeFor(err).String())
		_ = conn.CloseWith(int(protocol.CloseCodeFor(err)), protocol.CloseCodeFor(err).String())
		_ = mux.Close()
		return
	}
	// Registered before the Welcome goes out: a Space that heard Welcome
	// is reachable, so a call right after its attach never finds it offline.
	if !s.register(ss) {
		return
	}
	if err := ss.ctrl.WriteMessage(welcome); err != nil {
		ss.end(protocol.CloseNormal, "")
		return
	}
	ss.ping.Reset(s.cfg.Limits.Heartbeat)
	go ss.refuseStreams()
	ss.loop()
}

// refuseStreams ends the session when the Space opens a stream of its
// own: only the control stream is the Space's, every other is the relay's.
// Left unaccepted, such streams would each hold a window of data in the
// relay's memory.
func (ss *session) refuseStreams() {
	st, err := ss.mux.AcceptStream()
	if err != nil {
		return // the session ended
	}
	_ = st.Close()
	ss.end(protocol.CloseProtocolError, "a Space opens no stream but its control stream")
}

// handshake accepts the control stream and reads its Hello; it answers
// the session and the Welcome to send it.
func (s *Server) handshake(comp store.Computer, conn *tunnel.WSConn, mux *yamux.Session, log *slog.Logger) (*session, protocol.Welcome, error) {
	ctx, cancel := context.WithTimeout(context.Background(), HelloTimeout)
	defer cancel()
	st, err := mux.AcceptStreamWithContext(ctx)
	if err != nil {
		return nil, protocol.Welcome{}, api.Errorf(api.KindRelay, "no control stream within %s: %w", HelloTimeout, err)
	}
	_ = st.SetReadDeadline(time.Now().Add(HelloTimeout))
	hello, v, err := readHello(st)
	if err != nil {
		code := protocol.CloseCodeFor(err)
		_ = protocol.NewWriter(st, closeFrameTimeout).WriteMessage(protocol.Close{Code: code, Message: trimText(api.AsError(err).Message)})
		return nil, protocol.Welcome{}, err
	}
	welcome := protocol.Welcome{
		Version: v, GrantKey: s.cfg.Store.GrantKey().Public().(ed25519.PublicKey),
		Heartbeat: protocol.MillisOf(s.cfg.Limits.Heartbeat), Node: s.cfg.Node, Computer: comp.Name,
	}
	ss := &session{
		srv: s, comp: comp, version: v, since: s.clock.Now(), daemon: hello.DaemonVersion,
		ws: conn, mux: mux, ctrl: protocol.NewWriter(st, protocol.DefaultWriteTimeout), ctrlSt: st, log: log, done: make(chan struct{}),
	}
	return ss, welcome, nil
}

// readHello reads the first frame of a control stream: a Hello of a
// version this relay speaks. It is what the handshake fuzz target feeds.
func readHello(r io.Reader) (protocol.Hello, int, error) {
	m, err := protocol.NewReader(r).ReadMessage()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return protocol.Hello{}, 0, api.Errorf(api.KindInvalidArgument, "control stream ended before its hello").WithReason(protocol.CloseProtocolError.String())
		}
		return protocol.Hello{}, 0, err
	}
	hello, ok := m.(protocol.Hello)
	if !ok {
		return protocol.Hello{}, 0, api.Errorf(api.KindInvalidArgument, "control stream: %s before hello", m.FrameType()).WithReason(protocol.CloseProtocolError.String())
	}
	v, err := protocol.Negotiate(hello)
	if err != nil {
		return protocol.Hello{}, 0, err
	}
	return hello, v, nil
}

func trimText(s string) string {
	if len(s) > protocol.MaxTextLen {
		s = s[:protocol.MaxTextLen]
	}
	for len(s) > 0 && !isValidText(s) {
		s = s[:len(s)-1]
	}
	return s
}

func isValidText(s string) bool {
	_, err := protocol.Encode(protocol.Close{Code: protocol.CloseNormal, Message: s})
	return err == nil
}

// register makes ss the session of its computer; one that was there is
// ended with CloseReplaced (a Space that redialled before the relay saw
// its old session die). A relay shutting down or draining answers GoAway
// and ends ss instead (false).
func (s *Server) register(ss *session) bool {
	// The timer exists, stopped, before anyone else can see ss (and end
	// it); the first ping goes after the Welcome.
	ss.ping = time.AfterFunc(time.Hour, ss.sendPing)
	ss.ping.Stop()
	s.mu.Lock()
	if s.closing || s.drain != nil {
		retry := GoAwayRetryAfter
		if !s.closing {
			retry = s.drain.retryAfter
		}
		s.mu.Unlock()
		_ = ss.ctrl.WriteMessage(protocol.GoAway{Reason: protocol.CloseGoingAway, Message: "relay shutting down or draining", RetryAfter: protocol.MillisOf(retry)})
		ss.end(protocol.CloseGoingAway, "relay shutting down or draining")
		return false
	}
	old := s.sessions[ss.comp.Name]
	s.sessions[ss.comp.Name] = ss
	s.mu.Unlock()
	if old != nil {
		old.end(protocol.CloseReplaced, "a newer session of this computer attached")
	}
	s.announce(ss)
	s.metrics.Attaches.Add(1)
	ss.log.Info("attached", "daemon_version", ss.daemon, "version", ss.version)
	s.audit(store.AuditAttach, ss.comp.Name, "node "+s.cfg.Node)
	return true
}

func (s *Server) audit(action, computer, detail string) {
	s.auditAt(s.clock.Now(), action, computer, detail)
}

// auditAt appends a line of an event at ts.
func (s *Server) auditAt(ts time.Time, action, computer, detail string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.cfg.Store.Audit(ctx, store.AuditEntry{TS: ts.UnixMilli(), Action: action, Space: computer, Detail: detail}); err != nil {
		s.log.Warn("audit", "action", action, "computer", computer, "err", err)
	}
}

// session looks up the attached session of a computer.
func (s *Server) session(name string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[name]
}

// endSession ends the session of a computer, if it is attached here or
// to another node of the cluster.
func (s *Server) endSession(name string, code protocol.CloseCode, msg string) {
	if ss := s.session(name); ss != nil {
		ss.end(code, msg)
		return
	}
	s.notify(mesh.Notice{Op: mesh.OpEnd, Computer: name, Code: code, Why: msg})
}

// loop reads the control stream until the session ends: a frame resets the
// heartbeat's deadline; MissedHeartbeats intervals without one end it.
func (ss *session) loop() {
	rd := protocol.NewReader(ss.ctrlSt)
	idle := protocol.MissedHeartbeats * ss.srv.cfg.Limits.Heartbeat
	for {
		_ = ss.ctrlSt.SetReadDeadline(time.Now().Add(idle))
		m, err := rd.ReadMessage()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, yamux.ErrTimeout):
				ss.end(protocol.CloseHeartbeatTimeout, "no frame for "+idle.String())
			case errors.Is(err, io.EOF) || api.KindOf(err) == api.KindRelay:
				ss.end(protocol.CloseNormal, "")
			default:
				ss.end(protocol.CloseCodeFor(err), trimText(api.AsError(err).Message))
			}
			return
		}
		switch m := m.(type) {
		case protocol.Ping:
			if err := ss.ctrl.WriteMessage(protocol.Pong(m)); err != nil {
				ss.end(protocol.CloseNormal, "")
				return
			}
		case protocol.Pong:
		case protocol.Close:
			ss.log.Info("the Space ended its session", "code", m.Code.String(), "message", m.Message)
			ss.end(protocol.CloseNormal, "")
			return
		default:
			ss.end(protocol.CloseProtocolError, m.FrameType().String()+" from a Space")
			return
		}
	}
}

// sendPing pings the Space every heartbeat (a timer, not a goroutine, per
// idle session).
func (ss *session) sendPing() {
	select {
	case <-ss.done:
		return
	default:
	}
	err := ss.ctrl.WriteMessage(protocol.Ping{Nonce: ss.nonce.Add(1), SentAt: time.Now().UnixMilli()})
	if err != nil {
		ss.end(protocol.CloseNormal, "")
		return
	}
	ss.ping.Reset(ss.srv.cfg.Limits.Heartbeat)
}

// end ends the session once: Close{code} on the control stream (bounded),
// the yamux session, and the WebSocket with code in its close frame.
func (ss *session) end(code protocol.CloseCode, msg string) {
	ss.endOnce.Do(func() {
		close(ss.done)
		ss.ping.Stop()
		s := ss.srv
		s.mu.Lock()
		if s.sessions[ss.comp.Name] == ss {
			delete(s.sessions, ss.comp.Name)
		}
		unannounce := ss.unannounce
		ss.unannounce = nil
		s.mu.Unlock()
		if unannounce != nil {
			unannounce()
		}
		if code != protocol.CloseNormal || msg != "" {
			_ = protocol.NewWriter(ss.ctrlSt, closeFrameTimeout).WriteMessage(protocol.Close{Code: code, Message: msg})
		}
		// The WebSocket first: yamux's Close would close it with a
		// normal closure, and the Space reads the code from its close frame.
		_ = ss.ws.CloseWith(int(code), code.String())
		_ = ss.mux.Close()
		// Closed outside ss.mu: a stream's Close takes it (people.go).
		ss.mu.Lock()
		ts := ss.transports
		ss.transports = nil
		ss.mu.Unlock()
		for _, t := range ts {
			t.CloseIdleConnections()
		}
		ss.log.Info("detached", "code", code.String(), "message", msg)
		s.audit(store.AuditDetach, ss.comp.Name, code.String())
	})
}

// openStream opens a relayed stream for c: a yamux stream, its header with
// a grant of c signed now (carrying turn, if any), counted against the
// session's cap (and a link holder's against the links' cap) until closed.
func (ss *session) openStream(c caller, turn *protocol.TurnCredential) (net.Conn, error) {
	limits := &ss.srv.cfg.Limits
	if n := ss.streams.Add(1); int(n) > limits.MaxStreams {
		ss.streams.Add(-1)
		return nil, api.Errorf(api.KindLimitExceeded, "computer %q has %d relayed streams open, the most one session takes; close some, or retry", ss.comp.Name, limits.MaxStreams).
			WithReason(protocol.CloseTooManyStreams.String())
	}
	release := func() { ss.streams.Add(-1) }
	if c.link() {
		if n := ss.linkStreams.Add(1); int(n) > limits.MaxLinkStreams {
			ss.linkStreams.Add(-1)
			release()
			return nil, api.Errorf(api.KindLimitExceeded, "computer %q has %d streams of viewer links open, the most the relay takes; retry", ss.comp.Name, limits.MaxLinkStreams).
				WithReason(protocol.CloseTooManyStreams.String())
		}
		release = func() { ss.linkStreams.Add(-1); ss.streams.Add(-1) }
	}
	st, err := ss.mux.OpenStream()
	if err != nil {
		release()
		return nil, api.Errorf(api.KindRelay, "computer %q: open a stream: %w", ss.comp.Name, err)
	}
	conn := &countedConn{Conn: st, release: release}
	ss.track(conn, c)
	if err := ss.writeHeader(conn, c, turn); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// writeHeader writes a stream header with a fresh grant for c.
func (ss *session) writeHeader(w io.Writer, c caller, turn *protocol.TurnCredential) error {
	g := protocol.NewGrant(ss.comp.Name, c.id, c.name, c.role, ss.srv.clock.Now())
	g.Turn = turn
	b, err := protocol.SignGrant(ss.srv.cfg.Store.GrantKey(), g)
	if err != nil {
		return err
	}
	return protocol.WriteHeader(w, protocol.Header{Version: ss.version, Kind: protocol.StreamHTTP, Grant: b})
}

// countedConn releases its slot once, at its first Close.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
	// person and role are of the grant the stream carries.
	person string
	role   protocol.Role
	// why is set (under session.mu) when the relay cuts the stream: the
	// detach line's reason.
	why string
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
