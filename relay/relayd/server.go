// Package relayd is cua-relay's HTTPS server: the Spaces' control sessions
// (/v1/attach) and data connections (/v1/data), the owners' way to their
// computers (/c/<computer>/...) and viewer links' way to their streams,
// the user API (/v1/me, /v1/computers) and
// the admin API on a unix socket. Its state is the relay store (JetStream);
// what lives here is only what is live: the attached sessions.
package relayd

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/viewer"
	"github.com/trycua/cua-spacesd/relay/mesh"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/store"
)

// Limits. Each answers a clear error when reached.
const (
	// DefaultMaxSessions caps attached control sessions on one node: a
	// Space past it is answered 503 too_many_sessions with Retry-After.
	DefaultMaxSessions = 100_000
	// DefaultMaxStreams caps the relayed streams open at once on one
	// session (a caller past it: 429 limit_exceeded, too_many_streams).
	DefaultMaxStreams = 1024
	// MaxRequestHeaderBytes bounds a request's header on the listener.
	MaxRequestHeaderBytes = 64 << 10
	// ReadHeaderTimeout bounds a request's header (slowloris).
	ReadHeaderTimeout = 10 * time.Second
	// HelloTimeout bounds the wait for a new session's control stream and
	// its Hello.
	HelloTimeout = 10 * time.Second
	// DataDialTimeout bounds the wait for a Space's data connection after
	// an OpenData.
	DataDialTimeout = 15 * time.Second
	// MaxPendingData caps data connections asked for and not yet dialled,
	// over all sessions.
	MaxPendingData = 1024
	// BadTokenPause is how long a refused token's answer is held back, so
	// a Space or a script with a wrong token cannot retry in a tight loop.
	BadTokenPause = time.Second
	// MaxBadTokenPauses bounds the answers held back at once: past it a
	// refusal is answered at once (and counted), so a burst of bad tokens
	// never piles up waiting goroutines.
	MaxBadTokenPauses = 64
	// GoAwayRetryAfter is what a shutdown's GoAway asks Spaces to wait.
	GoAwayRetryAfter = time.Second
	// DefaultRecheck is how often the shares of people with live streams
	// are read again: a revocation whose cut was lost (another node, a
	// failed write) still ends their streams within it.
	DefaultRecheck = 30 * time.Second
	// shutdownCloseWait is how long Shutdown gives Spaces to leave after
	// its GoAway before it closes their sessions.
	shutdownCloseWait = 500 * time.Millisecond
)

// Clock is the time the server reads (grants, created times).
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Limits override the defaults above; zero keeps a default.
type Limits struct {
	MaxSessions int
	MaxStreams  int
	// Heartbeat is the interval Welcome names (default protocol.DefaultHeartbeat).
	Heartbeat time.Duration
	// BadTokenPause overrides BadTokenPause (tests shorten it).
	BadTokenPause time.Duration
	// LinkRate and LinkBurst are each computer's token bucket of link
	// forwards (requests with a media ticket: a viewer link's stream
	// routes; the page's files are the relay's own and take none), per second and at most at once; past it 429
	// limit_exceeded, reason rate_limited, with Retry-After (defaults
	// DefaultLinkRate, DefaultLinkBurst).
	LinkRate  int
	LinkBurst int
	// MaxLinkStreams caps the streams of link forwards open at once on
	// one session (default DefaultMaxLinkStreams, at most MaxStreams).
	MaxLinkStreams int
	// Recheck is how often the shares of the people with live streams
	// are read again (default DefaultRecheck; tests shorten it).
	Recheck time.Duration
}

// Config is what a Server runs with.
type Config struct {
	Store  *store.Store
	Logger *slog.Logger
	// Node names this node (Welcome.Node, Health.Node).
	Node string
	// URLs are the relay's public wss:// attach URLs, given to a Space with
	// its computer token (ComputerToken.URLs).
	URLs    []string
	Version string
	Limits  Limits
	Clock   Clock
	// TURN mints the TURN credentials of streams through the relay; nil
	// when the relay runs no TURN server (a viewer then gets only the
	// Space's own ICE servers, and media goes direct or not at all).
	TURN TURNMinter
}

// TURNMinter is the relay's TURN server as the proxy uses it
// (relay/turnsvc implements it).
type TURNMinter interface {
	// Credential mints a credential good for opening an allocation for
	// a short while, for one end (who: "space" or "viewer") of one view
	// of computer.
	Credential(computer, who string) protocol.TurnCredential
}

// Metrics are the server's counters.
type Metrics struct {
	// BadTokens counts refused tokens (attach, data and user calls).
	BadTokens atomic.Int64
	// BadTokensUnpaused counts refusals answered at once because
	// MaxBadTokenPauses answers were already held back.
	BadTokensUnpaused atomic.Int64
	// Attaches counts control sessions that reached Welcome.
	Attaches atomic.Int64
	// SessionsRefused counts attaches refused at the session cap.
	SessionsRefused atomic.Int64
	// DataConns counts data connections used for a bulk exchange.
	DataConns atomic.Int64
	// LinkForwards counts requests of link holders forwarded to a Space;
	// LinkRateLimited those refused by a computer's link rate.
	LinkForwards    atomic.Int64
	LinkRateLimited atomic.Int64
	// RemoteStreams counts streams this node opened to Spaces attached to
	// other nodes; HomeStreams those other nodes opened to Spaces here;
	// TrunkBytes the bytes of the latter, both ways.
	RemoteStreams atomic.Int64
	HomeStreams   atomic.Int64
	TrunkBytes    atomic.Int64
}

// Server is the relay's HTTPS server.
type Server struct {
	cfg      Config
	log      *slog.Logger
	clock    Clock
	upgrader websocket.Upgrader
	// dataUpgrader has larger buffers: a data connection carries bulk, and
	// a 4 KiB frame per write would cost throughput. There are few at once.
	dataUpgrader websocket.Upgrader
	pauses       chan struct{} // MaxBadTokenPauses slots
	// viewer serves the viewer page's files (media/viewer), the relay's
	// own copy: no Space serves anything on the relay's origin.
	viewer http.Handler

	mu       sync.Mutex
	sessions map[string]*session // by computer name
	pending  map[[32]byte]*pendingData
	closing  bool
	drain    *drainState // nil: not draining (drain.go)
	// mesh is the path to the other nodes of a cluster (nil: a single
	// node); remotes the computers attached to them that callers here
	// reach (nodes.go).
	mesh    *mesh.Mesh
	remotes map[string]*remote

	metrics  Metrics
	proxyLog *log.Logger // ReverseProxy's own lines, at Debug
}

// New makes a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("relayd: no store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Node == "" {
		cfg.Node = "relay"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	l := &cfg.Limits
	if l.MaxSessions <= 0 {
		l.MaxSessions = DefaultMaxSessions
	}
	if l.MaxStreams <= 0 {
		l.MaxStreams = DefaultMaxStreams
	}
	if l.Heartbeat == 0 {
		l.Heartbeat = protocol.DefaultHeartbeat
	}
	if l.Heartbeat < protocol.MinHeartbeat || l.Heartbeat > protocol.MaxHeartbeat {
		return nil, api.Errorf(api.KindInvalidArgument, "relayd: heartbeat %s: want %s to %s", l.Heartbeat, protocol.MinHeartbeat, protocol.MaxHeartbeat)
	}
	if l.BadTokenPause == 0 {
		l.BadTokenPause = BadTokenPause
	}
	if l.LinkRate <= 0 {
		l.LinkRate = DefaultLinkRate
	}
	if l.LinkBurst <= 0 {
		l.LinkBurst = DefaultLinkBurst
	}
	if l.MaxLinkStreams <= 0 {
		l.MaxLinkStreams = DefaultMaxLinkStreams
	}
	l.MaxLinkStreams = min(l.MaxLinkStreams, l.MaxStreams)
	if l.Recheck <= 0 {
		l.Recheck = DefaultRecheck
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger, clock: cfg.Clock,
		pauses:   make(chan struct{}, MaxBadTokenPauses),
		viewer:   viewer.New(),
		sessions: map[string]*session{},
		pending:  map[[32]byte]*pendingData{},
		remotes:  map[string]*remote{},
	}
	s.proxyLog = slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	s.upgrader = websocket.Upgrader{
		// Small buffers, and the write buffer pooled between writes: an
		// idle session must cost kilobytes (10,000 per GiB is the target).
		// ReadBufferSize 0 reuses the server's 4 KiB reader of the
		// hijacked connection instead of a second one.
		WriteBufferSize: 4 << 10,
		WriteBufferPool: &sync.Pool{},
		// A Space is no browser: a request with an Origin is refused.
		CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "" },
	}
	s.dataUpgrader = websocket.Upgrader{
		ReadBufferSize:  dataBufferSize,
		WriteBufferSize: dataBufferSize,
		WriteBufferPool: &sync.Pool{},
		CheckOrigin:     s.upgrader.CheckOrigin,
	}
	return s, nil
}

// dataBufferSize is the buffer of a data connection's WebSocket and of the
// HTTP exchange over it.
const dataBufferSize = 64 << 10

// Metrics are the server's counters.
func (s *Server) Metrics() *Metrics { return &s.metrics }

// Handler is the relay's HTTPS routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+relayapi.PathHealth, s.handleHealth)
	mux.HandleFunc("GET "+relayapi.PathAttach, s.handleAttach)
	mux.HandleFunc("GET "+relayapi.PathData, s.handleData)
	mux.HandleFunc("GET "+relayapi.PathMe, s.user(s.handleMe))
	mux.HandleFunc("GET "+relayapi.PathComputers, s.user(s.handleListComputers))
	mux.HandleFunc("POST "+relayapi.PathComputers, s.user(s.handleCreateComputer))
	mux.HandleFunc("GET "+relayapi.PathComputer, s.user(s.handleGetComputer))
	mux.HandleFunc("DELETE "+relayapi.PathComputer, s.user(s.handleDeleteComputer))
	mux.HandleFunc("GET "+relayapi.PathComputerShares, s.user(s.handleGetShares))
	mux.HandleFunc("PUT "+relayapi.PathComputerShares, s.user(s.handlePutShare))
	mux.HandleFunc("DELETE "+relayapi.PathComputerShares, s.user(s.handleDeleteShares))
	mux.HandleFunc(relayapi.PrefixComputer, s.handleComputer)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.Errorf(api.KindNotFound, "%s %s: no such route on cua-relay", r.Method, r.URL.Path))
	})
	return mux
}

// HTTPServer is the http.Server the relay serves Handler with (tlsConfig
// may be nil for a plain listener, as behind a TLS-terminating proxy).
func (s *Server) HTTPServer(tlsConfig *tls.Config) *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: ReadHeaderTimeout,
		MaxHeaderBytes:    MaxRequestHeaderBytes,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// Serve serves on ln (TLS when tlsConfig is not nil) until ctx ends, then
// shuts down: GoAway to every session, then close (Shutdown).
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config) error {
	if err := s.startMesh(); err != nil {
		return err
	}
	defer s.stopMesh()
	hs := s.HTTPServer(tlsConfig)
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	rctx, stopRecheck := context.WithCancel(ctx)
	defer stopRecheck()
	go s.recheckLoop(rctx)
	select {
	case err := <-errc:
		s.Shutdown()
		return err
	case <-ctx.Done():
	}
	// Sessions first: a hijacked connection is not the http.Server's to
	// wait for, and Spaces hear going_away rather than a cut.
	s.Shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc
	if errors.Is(err, context.DeadlineExceeded) {
		_ = hs.Close()
		err = nil
	}
	return err
}

// Shutdown sends GoAway{going_away, GoAwayRetryAfter} to every session,
// gives them a moment to leave, and closes what is left. New attaches are
// refused from here on (503).
func (s *Server) Shutdown() {
	s.mu.Lock()
	s.closing = true
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ss := range all {
		wg.Go(func() {
			_ = ss.ctrl.WriteMessage(protocol.GoAway{Reason: protocol.CloseGoingAway, Message: "relay shutting down", RetryAfter: protocol.MillisOf(GoAwayRetryAfter)})
		})
	}
	wg.Wait()
	if len(all) > 0 {
		time.Sleep(shutdownCloseWait)
	}
	for _, ss := range all {
		ss.end(protocol.CloseGoingAway, "relay shutting down")
	}
}

// Sessions reports how many control sessions are attached.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, relayapi.Health{Relay: relayapi.RelayName, Version: s.cfg.Version, Node: s.cfg.Node, Status: "ok",
		GrantKey: protocol.FormatGrantKey(s.cfg.Store.GrantKey().Public().(ed25519.PublicKey))})
}

// --- auth ---

// bearer is the request's bearer token, or "".
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// refuse answers a refused token after a bounded pause: held back by
// BadTokenPause while one of MaxBadTokenPauses slots is free, at once
// otherwise. Either way the goroutine is the request's own, and at most
// MaxBadTokenPauses of them wait.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	s.metrics.BadTokens.Add(1)
	select {
	case s.pauses <- struct{}{}:
		t := time.NewTimer(s.cfg.Limits.BadTokenPause)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
		<-s.pauses
	default:
		s.metrics.BadTokensUnpaused.Add(1)
	}
	e := api.AsError(err)
	if e.Kind != api.KindUnauthenticated {
		e = api.Errorf(api.KindUnauthenticated, "%s", e.Message).WithReason(protocol.CloseTokenInvalid.String())
	}
	writeError(w, e)
}

// user wraps a handler of the user API: the caller's bearer must be a user
// token (cuau_).
func (s *Server) user(h func(http.ResponseWriter, *http.Request, store.User)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		if tok == "" {
			writeError(w, api.Errorf(api.KindUnauthenticated, "no relay token: send Authorization: Bearer cuau_... (cua-relay token create USER)").WithReason(protocol.CloseTokenInvalid.String()))
			return
		}
		u, err := s.cfg.Store.UserByToken(r.Context(), tok)
		if err != nil {
			if api.KindOf(err) == api.KindUnauthenticated {
				s.refuse(w, r, err)
				return
			}
			writeError(w, err)
			return
		}
		h(w, r, u)
	}
}

// --- answers ---

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers err in the error envelope with its kind's status.
func writeError(w http.ResponseWriter, err error) {
	e := api.AsError(err)
	status := e.Kind.HTTPStatus()
	if e.Retryable && (status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests) {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, api.ErrorEnvelope{Error: e})
}

// unavailable answers 503 with Retry-After (a full or closing relay).
func unavailable(w http.ResponseWriter, retry time.Duration, code protocol.CloseCode, format string, args ...any) {
	e := api.Errorf(api.KindRelay, format, args...).WithReason(code.String()).WithRetryable(true).
		WithHint("retry after the Retry-After seconds")
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(retry/time.Second))))
	writeJSON(w, http.StatusServiceUnavailable, api.ErrorEnvelope{Error: e})
}
