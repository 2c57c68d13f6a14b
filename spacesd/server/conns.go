package server

import (
	"container/list"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Connection bounds. Before them, 3,000 sockets that each asked GET /health
// once and went quiet were all held, and at 20,000 the daemon ran out of
// descriptors and a good client timed out.
//
// A connection is anonymous until one of its requests authenticates with
// the token (a ticket's request leaves it anonymous: see Server.wrap). Only
// anonymous ones are cheap to open for anyone who can reach the port, so
// only they are bounded tightly: a short idle timeout, and a cap at which
// the one idle longest is closed to make room for the newcomer. A good
// client authenticates on its first request and leaves the anonymous pool
// at once; what an attacker's idle sockets fill is a pool that recycles.
const (
	// MaxAnonymousConns bounds the connections no request has
	// authenticated yet: health probes, clients on their first request.
	// It is at most half of the total, so they never crowd out the rest.
	MaxAnonymousConns = 256
	// AnonymousIdleTimeout closes an anonymous connection idle between
	// requests: a health probe that keeps its connection gains little.
	AnonymousIdleTimeout = 5 * time.Second
	// AuthenticatedIdleTimeout closes an authenticated connection idle
	// between requests. It is longer than the Go client's 90 s idle timeout
	// (api/client), so the client, not the daemon, closes a pooled
	// connection: a server closing it races the client's next request.
	AuthenticatedIdleTimeout = 2 * time.Minute
	// connFDShare: connections may hold at most 1/connFDShare of the
	// descriptors the process may open; the rest is for what the daemon
	// serves (pipes and PTYs of processes, files, uploads, the X display).
	connFDShare = 2
	// maxConnsCeiling bounds the total even under a huge RLIMIT_NOFILE (the
	// systemd unit sets 1,048,576): at about 20 KB per idle connection,
	// memory runs out before descriptors do.
	maxConnsCeiling = 16384
	// minConns is the floor under a tiny RLIMIT_NOFILE.
	minConns = 8
	// refusalLogInterval spaces the warnings of refused connections: a
	// flood would otherwise write a log line per connection.
	refusalLogInterval = time.Minute
)

// Metric names of the connection bounds.
const (
	metricConnsAnonymous     = "cua_spacesd_connections_anonymous"
	metricConnsAuthenticated = "cua_spacesd_connections_authenticated"
	metricConnsStreams       = "cua_spacesd_connections_streams"
	metricConnsEvicted       = "cua_spacesd_connections_evicted_total"
	metricConnsRefused       = "cua_spacesd_connections_refused_total"
)

// ConnLimits bound the daemon's connections; a zero field takes its default.
type ConnLimits struct {
	// MaxTotal bounds every connection, streams included (default: half of
	// RLIMIT_NOFILE, at most 16384). Past it, a newcomer takes the place of
	// an idle anonymous connection, or is closed when there is none.
	MaxTotal int
	// MaxAnonymous bounds connections not yet authenticated (default
	// MaxAnonymousConns, and at most MaxTotal/2).
	MaxAnonymous int
	// AnonymousIdle and AuthenticatedIdle are the idle timeouts between
	// requests (defaults AnonymousIdleTimeout and AuthenticatedIdleTimeout).
	AnonymousIdle     time.Duration
	AuthenticatedIdle time.Duration
}

func (l ConnLimits) withDefaults() ConnLimits {
	if l.MaxTotal <= 0 {
		l.MaxTotal = defaultMaxConns()
	}
	if l.MaxAnonymous <= 0 {
		l.MaxAnonymous = MaxAnonymousConns
	}
	l.MaxAnonymous = max(1, min(l.MaxAnonymous, l.MaxTotal/2))
	if l.AnonymousIdle <= 0 {
		l.AnonymousIdle = AnonymousIdleTimeout
	}
	if l.AuthenticatedIdle <= 0 {
		l.AuthenticatedIdle = AuthenticatedIdleTimeout
	}
	return l
}

// defaultMaxConns derives the total from the descriptor limit (which the
// Go runtime has already raised to its hard value).
func defaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur/connFDShare > maxConnsCeiling {
		return maxConnsCeiling
	}
	return max(minConns, int(rl.Cur/connFDShare))
}

// connTracker accounts for every connection of one Server: it admits them
// at Accept, follows their states through http.Server's ConnState, and
// forgets them when they close. It owns no goroutine: its idle timers run
// only while a connection is idle and stop when it closes.
type connTracker struct {
	limits  ConnLimits
	log     *slog.Logger
	evicted Counter
	refused Counter

	mu            sync.Mutex
	total         int
	anonymous     int
	authenticated int // streams included
	streams       int
	// The anonymous connections that may be closed to make room, oldest
	// first: idle ones (they have had their answers) before fresh ones
	// (which may be a good client's first request, still in flight).
	idle, fresh list.List
	lastRefusal time.Time
}

func newConnTracker(l ConnLimits, log *slog.Logger, m Metrics) *connTracker {
	t := &connTracker{limits: l.withDefaults(), log: log,
		evicted: m.Counter(metricConnsEvicted), refused: m.Counter(metricConnsRefused)}
	gauge := func(name string, read func() int) {
		m.Gauge(name, func() float64 {
			t.mu.Lock()
			defer t.mu.Unlock()
			return float64(read())
		})
	}
	gauge(metricConnsAnonymous, func() int { return t.anonymous })
	gauge(metricConnsAuthenticated, func() int { return t.authenticated })
	gauge(metricConnsStreams, func() int { return t.streams })
	return t
}

// trackedConn is a connection the tracker accounts for. The http.Server
// serves it as it is, and a WebSocket handler gets it from Hijack: its Close,
// whoever calls it, is how the tracker learns that the connection ended.
type trackedConn struct {
	net.Conn
	t *connTracker

	// Guarded by t.mu.
	anonymous bool
	stream    bool
	gone      bool
	elem      *list.Element // in t.idle or t.fresh, or nil
	in        *list.List
	idleGen   uint64 // which idle spell the idle timer belongs to
	idleTimer *time.Timer

	// pendingAuth marks a connection whose request may authenticate after
	// its WebSocket upgrade (Route.InBandAuth): it stays anonymous, and
	// evictable, until it does. Guarded by t.mu.
	pendingAuth bool

	closeOnce sync.Once
	closeErr  error
}

func (c *trackedConn) Close() error {
	c.closeOnce.Do(func() {
		c.t.mu.Lock()
		c.t.forget(c)
		c.t.mu.Unlock()
		c.closeErr = c.Conn.Close()
	})
	return c.closeErr
}

// listener admits each accepted connection through the tracker.
func (t *connTracker) listener(ln net.Listener) net.Listener { return &trackingListener{ln, t} }

type trackingListener struct {
	net.Listener
	t *connTracker
}

func (l *trackingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := l.t.admit(c); tc != nil {
			return tc, nil
		}
	}
}

// admit accounts for a new connection. At a cap it closes the anonymous
// connection idle longest (or, with none idle, the one fresh longest) to
// make room; with none to close, it closes the newcomer and returns nil.
func (t *connTracker) admit(c net.Conn) *trackedConn {
	t.mu.Lock()
	var victim *trackedConn
	if t.anonymous >= t.limits.MaxAnonymous || t.total >= t.limits.MaxTotal {
		victim = t.oldestEvictable()
		if victim == nil {
			warn := time.Since(t.lastRefusal) >= refusalLogInterval
			if warn {
				t.lastRefusal = time.Now()
			}
			t.mu.Unlock()
			t.refused.Add(1)
			_ = c.Close()
			if warn {
				t.log.Warn("connection refused: every connection slot is taken by an authenticated client or a request in progress",
					"max_total", t.limits.MaxTotal, "max_anonymous", t.limits.MaxAnonymous)
			}
			return nil
		}
		// Forget it now, under the lock, so that the newcomer's slot is
		// free before the victim's Close runs.
		t.forget(victim)
	}
	tc := &trackedConn{Conn: c, t: t, anonymous: true}
	t.total++
	t.anonymous++
	tc.elem, tc.in = t.fresh.PushBack(tc), &t.fresh
	t.mu.Unlock()
	if victim != nil {
		t.evicted.Add(1)
		_ = victim.Close()
	}
	return tc
}

func (t *connTracker) oldestEvictable() *trackedConn {
	for _, l := range []*list.List{&t.idle, &t.fresh} {
		if e := l.Front(); e != nil {
			return e.Value.(*trackedConn)
		}
	}
	return nil
}

// forget takes c out of the accounting, once. Callers hold t.mu.
func (t *connTracker) forget(c *trackedConn) {
	if c.gone {
		return
	}
	c.gone = true
	t.unlist(c)
	t.total--
	switch {
	case c.anonymous:
		t.anonymous--
	default:
		t.authenticated--
	}
	if c.stream {
		t.streams--
	}
}

// unlist takes c off the evictable lists and stops its idle timer.
// Callers hold t.mu.
func (t *connTracker) unlist(c *trackedConn) {
	if c.elem != nil {
		c.in.Remove(c.elem)
		c.elem, c.in = nil, nil
	}
	if c.idleTimer != nil {
		c.idleTimer.Stop()
		c.idleTimer = nil
	}
}

// connState follows http.Server's view of a connection.
func (t *connTracker) connState(nc net.Conn, st http.ConnState) {
	c, ok := tracked(nc)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.gone {
		return
	}
	switch st {
	case http.StateActive:
		// A request in progress is never evicted.
		t.unlist(c)
	case http.StateIdle:
		if !c.anonymous {
			return // http.Server's IdleTimeout is the authenticated one
		}
		t.unlist(c)
		c.elem, c.in = t.idle.PushBack(c), &t.idle
		c.idleGen++
		gen := c.idleGen
		c.idleTimer = time.AfterFunc(t.limits.AnonymousIdle, func() { t.idleExpired(c, gen) })
	case http.StateHijacked:
		// The handler owns the connection now (a WebSocket stream): its
		// lifetime is the stream's, and it counts until its Close.
		t.unlist(c)
		c.stream = true
		t.streams++
		if c.anonymous && c.pendingAuth {
			// Not authenticated yet: it may be closed to make room, as
			// any anonymous connection (promote ends that).
			c.elem, c.in = t.fresh.PushBack(c), &t.fresh
			return
		}
		if c.anonymous {
			c.anonymous = false
			t.anonymous--
			t.authenticated++
		}
	}
}

// idleExpired closes c if it is still in the idle spell gen.
func (t *connTracker) idleExpired(c *trackedConn, gen uint64) {
	t.mu.Lock()
	expired := !c.gone && c.in == &t.idle && c.idleGen == gen
	t.mu.Unlock()
	if expired {
		_ = c.Close()
	}
}

// promote moves the connection of a request that authenticated out of the
// anonymous pool: it is no longer evicted, and idles as long as
// http.Server's IdleTimeout allows.
func (t *connTracker) promote(c *trackedConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.gone || !c.anonymous {
		return
	}
	t.unlist(c)
	c.anonymous = false
	t.anonymous--
	t.authenticated++
}

// tracked is the tracker's connection under c, which may be TLS over it.
func tracked(c net.Conn) (*trackedConn, bool) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	tc, ok := c.(*trackedConn)
	return tc, ok
}

// connKey is the context key of a request's *trackedConn.
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	if pc, ok := c.(*principalConn); ok {
		return context.WithValue(ctx, principalKey{}, pc)
	}
	if tc, ok := tracked(c); ok {
		return context.WithValue(ctx, connKey{}, tc)
	}
	return ctx
}

// promoteConn promotes the connection a request came on (none when the
// handler is served outside Serve, as in a test of Handler).
func promoteConn(ctx context.Context) {
	if tc, ok := ctx.Value(connKey{}).(*trackedConn); ok {
		tc.t.promote(tc)
	}
}

// markPendingAuth marks the connection of a request that may authenticate
// after its upgrade (see trackedConn.pendingAuth).
func markPendingAuth(ctx context.Context) {
	if tc, ok := ctx.Value(connKey{}).(*trackedConn); ok {
		tc.t.mu.Lock()
		tc.pendingAuth = true
		tc.t.mu.Unlock()
	}
}

// connCounts is a snapshot of the accounting (tests, metrics).
type connCounts struct{ Total, Anonymous, Authenticated, Streams int }

func (t *connTracker) counts() connCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return connCounts{t.total, t.anonymous, t.authenticated, t.streams}
}
