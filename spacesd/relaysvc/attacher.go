package relaysvc

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/yamux"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/tunnel"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// dialTimeout bounds one dial and its TLS and WebSocket handshakes.
const dialTimeout = 30 * time.Second

// errClockJump ends a session after the machine was paused: the relay has
// long given the session up, so the attacher redials at once.
var errClockJump = errors.New("the clock jumped (the machine was paused?): redialling at once")

// goAwayError is the relay's go_away: leave, and dial again no sooner
// than RetryAfter.
type goAwayError struct{ m protocol.GoAway }

func (e *goAwayError) Error() string {
	return fmt.Sprintf("the relay asked the Space to go away (%s): retry after %s", e.m.Reason, e.m.RetryAfter.Duration())
}

// attacher keeps one Space's control session with its relay: it dials,
// says hello, checks the welcome, pins the grant key, heartbeats, hands
// each relayed stream whose grant holds to the server, and redials.
type attacher struct {
	o     Options
	clock Clock
	log   *slog.Logger
	serve func(net.Conn, server.Principal) error
	// held ends the sessions a person holds past their connections (a
	// stream's viewer): server.Host.Kick.
	held func(match func(person string, role server.Role) bool) int

	mu   sync.Mutex
	att  *attachment // nil: detached
	st   api.RelayStatus
	wake chan struct{} // closed at every status change
	// cancel ends the current loop; done is closed when it has ended.
	cancel context.CancelFunc
	done   chan struct{}
	conns  map[*streamConn]struct{}
	// closed: the service closed; start is a no-op from then on.
	closed bool
	// refused: the last try was refused in a way a quick retry does not
	// fix (the token); a PUT stops waiting then.
	tokenRefused bool

	wg    sync.WaitGroup // every goroutine, for Close
	dials atomic.Int64   // attach dials tried (tests, doctor)

	// Counters (nil-safe: a bare attacher in a test has none).
	streams, refused server.Counter
}

// Metric names of relay_attach.
const (
	metricDials          = "cua_spacesd_relay_dials_total"
	metricStreams        = "cua_spacesd_relay_streams_total"
	metricGrantsRefused  = "cua_spacesd_relay_streams_refused_total"
	metricRelayConnected = "cua_spacesd_relay_connected"
)

func count(c server.Counter) {
	if c != nil {
		c.Add(1)
	}
}

func newAttacher(o Options, serve func(net.Conn, server.Principal) error, held func(func(string, server.Role) bool) int) *attacher {
	return &attacher{o: o, clock: o.Clock, log: o.Logger, serve: serve, held: held,
		wake: make(chan struct{}), conns: map[*streamConn]struct{}{}}
}

// update changes the status under the lock and wakes the waiters.
func (a *attacher) update(f func(st *api.RelayStatus)) {
	a.mu.Lock()
	f(&a.st)
	close(a.wake)
	a.wake = make(chan struct{})
	a.mu.Unlock()
}

// status is the current RelayStatus.
func (a *attacher) status() api.RelayStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.st
	if a.att == nil {
		return api.RelayStatus{LastError: st.LastError, LastErrorMS: st.LastErrorMS}
	}
	st.Attached = true
	st.URLs = append([]string(nil), a.att.URLs...)
	st.Computer = a.att.Computer
	st.Fingerprint = a.att.Fingerprint
	st.GrantKey = a.att.GrantKey
	return st
}

// start (re)attaches with att: the loop of a previous attachment ends
// first, its sessions and relayed connections with it; then persist (if
// any) keeps att, so that no session of the old one writes after it.
func (a *attacher) start(att attachment, persist func(*attachment) error) error {
	a.stop()
	if persist != nil {
		if err := persist(&att); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		cancel()
		return nil
	}
	a.att, a.cancel, a.done, a.tokenRefused = &att, cancel, done, false
	a.mu.Unlock()
	a.update(func(st *api.RelayStatus) { *st = api.RelayStatus{} })
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(done)
		a.loop(ctx)
	}()
	return nil
}

// stop ends the current loop, if any, and waits for it; the attachment
// is forgotten. It reports whether there was one.
func (a *attacher) stop() bool {
	a.mu.Lock()
	cancel, done, was := a.cancel, a.done, a.att != nil
	a.cancel, a.done, a.att = nil, nil, nil
	a.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	a.closeConns(func(*streamConn) bool { return true })
	a.update(func(st *api.RelayStatus) { st.Connected, st.ConnectedSinceMS = false, 0 })
	return was
}

// close stops the attacher for good and waits for its goroutines.
func (a *attacher) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.stop()
	a.wg.Wait()
}

// current is a copy of the attachment (ok false once detached).
func (a *attacher) current() (attachment, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.att == nil {
		return attachment{}, false
	}
	return *a.att, true
}

// learn records what a welcome taught (the computer's name, the pinned
// key) and the URL that worked, and keeps them in the state dir: a
// restarted Space starts at that URL.
func (a *attacher) learn(computer string, key ed25519.PublicKey, url string) {
	a.mu.Lock()
	if a.att == nil {
		a.mu.Unlock()
		return
	}
	a.att.Computer, a.att.GrantKey, a.att.LastURL = computer, formatGrantKey(key), url
	att := *a.att
	a.mu.Unlock()
	if err := saveState(a.o.StateDir, att); err != nil {
		a.log.Warn("relay: cannot keep the attachment in the state dir; a restart will not re-attach", "err", err)
	}
}

// waitConnected waits up to d for a session, or a refusal that ends the
// loop, and answers the status then.
func (a *attacher) waitConnected(ctx context.Context, d time.Duration) api.RelayStatus {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		a.mu.Lock()
		wake, st, done, refused := a.wake, a.st, a.done, a.tokenRefused
		a.mu.Unlock()
		if st.Connected || done == nil || refused {
			return a.status()
		}
		select {
		case <-wake:
		case <-done:
			return a.status()
		case <-t.C:
			return a.status()
		case <-ctx.Done():
			return a.status()
		}
	}
}

// loop dials the relay's URLs until ctx ends. It starts at the URL of the
// last good session (kept in the state dir) and moves to the next URL
// whenever a session or a dial fails: a node that died, refused the Space
// or sent go_away is left for another node of the relay. A round tries
// each URL once; within a round the move goes at once (after a go_away,
// after its Retry-After), and between rounds the backoff waits (redial.go).
func (a *attacher) loop(ctx context.Context) {
	att, ok := a.current()
	if !ok {
		return
	}
	r := newRedial(att, a.o.Rand)
	for {
		att, ok := a.current()
		if !ok {
			return
		}
		url := r.url(att.URLs)
		var res sessionResult
		err := a.session(ctx, url, att, &res)
		if ctx.Err() != nil {
			return
		}
		var refused *dialRefusedError
		a.failed(err, errors.As(err, &refused) && refused.tokenRefused())
		if errors.Is(err, errGrantKeyChanged) {
			a.log.Error("relay: the relay's grant key changed; refusing it until the Space is attached again (PUT /v1/relay)", "url", url)
			return
		}
		wait := r.after(len(att.URLs), res, err)
		a.log.Info("relay: session ended; redialling", "url", url, "next", r.url(att.URLs), "err", err, "wait", wait)
		select {
		case <-ctx.Done():
			return
		case <-a.clock.After(wait):
		}
	}
}

// failed records why the last session ended or dial failed.
func (a *attacher) failed(err error, tokenRefused bool) {
	a.update(func(st *api.RelayStatus) {
		a.tokenRefused = tokenRefused // under a.mu, as update runs f
		st.Connected, st.ConnectedSinceMS = false, 0
		st.LastError, st.LastErrorMS = err.Error(), a.clock.Now().UnixMilli()
	})
}

// dialer is the WebSocket dialer of the relay's TLS.
func dialer(cfg *tls.Config) *websocket.Dialer {
	return &websocket.Dialer{TLSClientConfig: cfg, HandshakeTimeout: dialTimeout, Proxy: http.ProxyFromEnvironment}
}

// sessionResult is what the redial needs of a session that ended: whether
// it came up, and for how long.
type sessionResult struct {
	up     bool
	lasted time.Duration
}

// session dials url, runs one control session until it ends, and answers
// why; res says whether it came up and how long it lasted.
func (a *attacher) session(ctx context.Context, url string, att attachment, res *sessionResult) error {
	tok, err := att.readToken()
	if err != nil {
		return err
	}
	cfg, err := tlsConfig(att)
	if err != nil {
		return err
	}
	u, err := attachURL(url)
	if err != nil {
		return err
	}
	a.dials.Add(1)
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	ws, resp, err := dialer(cfg).DialContext(dctx, u, http.Header{"Authorization": {"Bearer " + tok}})
	cancel()
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return refusedFrom(resp)
		}
		return api.Errorf(api.KindRelay, "dial %s: %w", url, err)
	}
	conn := tunnel.NewWSConn(ws)
	sess, err := yamux.Client(conn, tunnel.Config(a.log))
	if err != nil {
		conn.Close()
		return err
	}
	// A session left after a go_away lingers (linger.go): closing it is
	// then the lingering goroutine's.
	lingers := false
	defer func() {
		if !lingers {
			_ = sess.Close()
		}
	}()
	// A detach during the handshake must not wait for its deadlines.
	stopClose := context.AfterFunc(ctx, func() { _ = sess.Close() })
	defer stopClose()
	ctrl, err := sess.Open()
	if err != nil {
		return api.Errorf(api.KindRelay, "open the control stream: %w", err)
	}
	w := protocol.NewWriter(ctrl, protocol.DefaultWriteTimeout)
	r := protocol.NewReader(ctrl)
	hello := protocol.NewHello(att.Computer, a.o.Version)
	if err := w.WriteMessage(hello); err != nil {
		return err
	}
	pinned, err := att.grantKey()
	if err != nil {
		return err
	}
	_ = ctrl.SetReadDeadline(time.Now().Add(protocol.HeaderTimeout))
	welcome, err := readWelcome(r, hello, pinned)
	if err != nil {
		if code := protocol.CloseCodeFor(err); code == protocol.CloseGrantKeyChanged || code == protocol.CloseProtocolError || code == protocol.CloseUnsupportedVersion {
			_ = w.WriteMessage(protocol.Close{Code: code})
		}
		return err
	}
	_ = ctrl.SetReadDeadline(time.Time{})
	if !stopClose() {
		return ctx.Err() // detached meanwhile
	}
	if pinned == nil || att.Computer != welcome.Computer || att.LastURL != url {
		a.learn(welcome.Computer, welcome.GrantKey, url)
	}
	start := a.clock.Monotonic()
	res.up = true
	defer func() { res.lasted = a.clock.Monotonic() - start }()
	a.update(func(st *api.RelayStatus) {
		st.Connected, st.URL, st.Node = true, url, welcome.Node
		st.ConnectedSinceMS = a.clock.Now().UnixMilli()
	})
	a.log.Info("relay: attached", "url", url, "node", welcome.Node, "computer", welcome.Computer)
	ss := &session{a: a, url: url, sess: sess, w: w, r: r, key: welcome.GrantKey, computer: welcome.Computer,
		version: welcome.Version, heartbeat: welcome.Heartbeat.Duration(), tls: cfg, goAway: make(chan protocol.GoAway, 1)}
	err = ss.run(ctx)
	var goAway *goAwayError
	lingers = errors.As(err, &goAway)
	return err
}

// session is one control session, up.
type session struct {
	a         *attacher
	url       string
	sess      *yamux.Session
	w         *protocol.Writer
	r         *protocol.Reader
	key       ed25519.PublicKey
	computer  string
	version   int
	heartbeat time.Duration
	tls       *tls.Config
	lastRecv  atomic.Int64 // monotonic ns of the last frame read
	// goAway carries the relay's go_away from the control reader.
	goAway chan protocol.GoAway
}

func (s *session) run(ctx context.Context) error {
	clock := s.a.clock
	s.lastRecv.Store(int64(clock.Monotonic()))
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); errc <- s.readControl(ctx) }()
	go func() { defer wg.Done(); errc <- s.accept(ctx) }()
	end := func(code protocol.CloseCode, err error) error {
		if code != 0 {
			_ = s.w.WriteMessage(protocol.Close{Code: code})
		}
		_ = s.sess.Close()
		wg.Wait()
		return err
	}
	var nonce uint64
	for {
		w0, m0 := clock.Now(), clock.Monotonic()
		select {
		case <-ctx.Done():
			return end(protocol.CloseNormal, ctx.Err())
		case err := <-errc:
			return end(0, err)
		case m := <-s.goAway:
			// The streams in flight finish on this session while the
			// Space dials the next node (linger.go).
			s.a.wg.Add(1)
			go func() {
				defer s.a.wg.Done()
				s.linger(ctx, errc)
				_ = end(protocol.CloseNormal, nil)
			}()
			return &goAwayError{m}
		case <-clock.After(s.heartbeat):
		}
		w1, m1 := clock.Now(), clock.Monotonic()
		if clockJumped(w0, w1, m0, m1, s.heartbeat) {
			return end(0, errClockJump)
		}
		if m1-time.Duration(s.lastRecv.Load()) > protocol.MissedHeartbeats*s.heartbeat {
			return end(protocol.CloseHeartbeatTimeout, protocol.CloseHeartbeatTimeout.Err(fmt.Sprintf("no frame from the relay for %d heartbeats", protocol.MissedHeartbeats)))
		}
		nonce++
		if err := s.w.WriteMessage(protocol.Ping{Nonce: nonce, SentAt: w1.UnixMilli()}); err != nil {
			return end(0, api.Errorf(api.KindRelay, "ping the relay: %w", err))
		}
	}
}

// readControl reads the relay's control frames until the session ends.
func (s *session) readControl(ctx context.Context) error {
	for {
		m, err := s.r.ReadMessage()
		if err != nil {
			return api.Errorf(api.KindRelay, "the control stream ended: %w", err)
		}
		s.lastRecv.Store(int64(s.a.clock.Monotonic()))
		switch m := m.(type) {
		case protocol.Ping:
			if err := s.w.WriteMessage(protocol.Pong(m)); err != nil {
				return err
			}
		case protocol.Pong:
		case protocol.GoAway:
			// Read on: a lingering session still answers pings and kicks.
			select {
			case s.goAway <- m:
			default:
			}
		case protocol.Kick:
			n, held := s.a.kick(m.Person)
			s.a.log.Info("relay: kicked", "person", m.Person, "reason", m.Reason, "connections", n, "streams", held)
		case protocol.OpenData:
			s.a.wg.Add(1)
			go func() { defer s.a.wg.Done(); s.openData(ctx, m) }()
		case protocol.Close:
			return m.Code.Err(m.Message)
		default:
			return protocol.CloseProtocolError.Err(fmt.Sprintf("the relay sent %s on the control stream", m.FrameType()))
		}
	}
}

// accept hands each stream the relay opens to its check and the server.
func (s *session) accept(ctx context.Context) error {
	for {
		c, err := s.sess.Accept()
		if err != nil {
			return api.Errorf(api.KindRelay, "the relay session ended: %w", err)
		}
		s.a.wg.Add(1)
		go func() { defer s.a.wg.Done(); s.a.serveStream(c, s.key, s.computer, s.version, s.via()) }()
	}
}

// openData dials the data connection an OpenData asks for and serves
// its one exchange.
func (s *session) openData(ctx context.Context, m protocol.OpenData) {
	u, err := dataURL(s.url, m.Path)
	if err != nil {
		s.a.log.Warn("relay: open_data refused", "err", err)
		return
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	ws, resp, err := dialer(s.tls).DialContext(dctx, u, http.Header{"Authorization": {"Bearer " + m.Token}})
	cancel()
	if err != nil {
		if resp != nil {
			err = refusedFrom(resp)
		}
		s.a.log.Warn("relay: the data connection failed", "path", m.Path, "err", err)
		return
	}
	s.a.serveStream(tunnel.NewBulkWSConn(ws), s.key, s.computer, s.version, s.via())
}
