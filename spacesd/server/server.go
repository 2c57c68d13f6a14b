// Package server is cua-spacesd's HTTP surface: the route table, auth,
// browser checks, feature gating, logging and metrics. It mounts Services
// (see service.go) and knows none of them: each capability's routes live in
// its own service package, and spacesd/daemon chooses the set.
package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/loopback"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
)

// ErrShutdown is the cause (context.Cause) of the context of a stream ended
// when a shutdown starts, and of a request still running at the hard stop.
var ErrShutdown = errors.New("the daemon is shutting down")

// Shutdown budgets: graceful lets running requests finish, then hard closes.
const (
	GracefulShutdownTimeout = 10 * time.Second
	readHeaderTimeout       = 10 * time.Second
	capabilitiesCacheTTL    = 2 * time.Second
)

// AuthFailureDelay is how long every refused credential waits before its
// answer: a guesser on one connection gets a few tries a second (and the
// anonymous connections are bounded, see conns.go), while a client with a
// stale token hardly notices.
const AuthFailureDelay = 250 * time.Millisecond

// HeaderAPIKey is the header computer-server's clients send the key in; a
// route with APIKey takes the token there too.
const HeaderAPIKey = "X-API-Key"

// metricAuthFailures counts refused credentials, in headers or in band.
const metricAuthFailures = "cua_spacesd_auth_failures_total"

// Config is what a Server is built from.
type Config struct {
	Version string
	// Auth decides who may call; nil means no token (loopback only).
	Auth   *Auth
	Logger *slog.Logger
	// Display is the X display the desktop uses ("" = none), reported in
	// the capabilities.
	Display string
	// Services are mounted in this order and closed in the reverse one.
	Services []NewService
	// Conns bound the connections (see conns.go); zero fields take defaults.
	Conns ConnLimits
	// TLS, when set, serves HTTPS and WSS on the listener (NewTLSConfig).
	TLS *tls.Config
	// AuthFailurePause is how a refused credential is slowed down before
	// its answer; nil waits AuthFailureDelay (or until the request ends).
	// A test daemon that refuses thousands of tokens on purpose may pass a
	// shorter one.
	AuthFailurePause func(context.Context)
	// Now is the clock of the idempotency keys' lifetime; nil is
	// time.Now. A test holds it to see a key expire.
	Now func() time.Time
}

// Server is one cua-spacesd HTTP surface.
type Server struct {
	cfg      Config
	log      *slog.Logger
	holds    holds
	auth     *Auth
	metrics  *metrics
	routes   []Route
	mux      *http.ServeMux
	services []Service
	conns    *connTracker
	// public holds the paths of the public routes, whatever the method,
	// and the methods each is served with (see methodNotAllowed).
	public *http.ServeMux
	idem   *idempotency

	probes map[api.Feature]Probe

	capsMu    sync.Mutex
	caps      *api.Capabilities
	capsStamp time.Time

	// streams ends when a shutdown starts. http.Server.Shutdown neither
	// waits for nor closes hijacked connections, so every WebSocket stream
	// is tied to it (see recorder.Hijack) while plain requests run on.
	streams    context.Context
	endStreams context.CancelFunc

	// relayed are the connections handed over by ServeConn.
	relayed *connListener
}

// New builds a Server from its services and checks the route table.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if cfg.Auth == nil {
		cfg.Auth = NewAuth("", cfg.Logger)
	}
	if cfg.AuthFailurePause == nil {
		cfg.AuthFailurePause = func(ctx context.Context) {
			t := time.NewTimer(AuthFailureDelay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		auth:    cfg.Auth,
		metrics: newMetrics(),
		probes:  map[api.Feature]Probe{},
		relayed: newConnListener(),
	}
	s.streams, s.endStreams = context.WithCancel(context.Background())
	s.conns = newConnTracker(cfg.Conns, s.log, s.metrics)
	s.idem = newIdempotency(cfg.Now, s.metrics)
	s.metrics.Counter(metricAuthFailures)
	// The mux exists before the services, which may call the daemon's
	// routes themselves (Host.Handler); it is filled in below.
	s.mux = http.NewServeMux()
	host := Host{Log: s.log, Metrics: s.metrics, Feature: s.featureStatus, MintTicket: s.auth.MintTicket, Session: s.auth.Session,
		Hold: s.hold, Kick: s.Kick, Authenticate: s.authenticateInBand, Handler: s.mux, ServeConn: s.ServeConn}
	s.routes = s.systemRoutes()
	for _, newService := range cfg.Services {
		svc, err := newService(host)
		if err != nil {
			s.closeServices()
			return nil, err
		}
		s.services = append(s.services, svc)
		for f, p := range svc.Features() {
			if _, dup := s.probes[f]; dup {
				s.closeServices()
				return nil, fmt.Errorf("two services probe the feature %s", f)
			}
			s.probes[f] = p
		}
		s.routes = append(s.routes, svc.Routes()...)
	}
	s.public = publicPaths(s.routes)
	seen := map[string]bool{}
	for _, rt := range s.routes {
		pattern := rt.Method + " " + rt.Path
		if seen[pattern] {
			s.closeServices()
			return nil, fmt.Errorf("the route %s is served twice", pattern)
		}
		seen[pattern] = true
		if rt.Idempotent && (rt.Ticket != "" || rt.Public || rt.Method == http.MethodGet) {
			s.closeServices()
			return nil, fmt.Errorf("the route %s cannot be idempotent: only the token's mutating calls keep keys", pattern)
		}
		s.mux.Handle(pattern, s.wrap(rt))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Unknown routes answer in our envelope too, but only to a caller
		// with the token: without it every route is a 401.
		if err := s.checkBrowser(r); err != nil {
			httpapi.WriteError(w, err)
			return
		}
		if h, pattern := s.public.Handler(r); pattern != "" {
			// A public page asked with another method: 405, as any
			// static page answers, not a 401 for a page that needs none.
			h.ServeHTTP(w, r)
			return
		}
		if _, relayed := relayedConn(r.Context()); relayed {
			// The principal is the caller: it may learn that a route
			// does not exist.
		} else if _, ok := s.authenticate(r, false); !ok {
			s.failedAuth(r.Context())
			httpapi.WriteError(w, errUnauthenticated)
			return
		}
		promoteConn(r.Context())
		httpapi.WriteError(w, api.Errorf(api.KindNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return s, nil
}

// publicPaths routes the paths of the public routes, with any method, to
// an answer of 405 with the methods they are served with: a request that
// reaches it matched none of them.
func publicPaths(routes []Route) *http.ServeMux {
	methods := map[string][]string{}
	var paths []string
	for _, rt := range routes {
		if !rt.Public {
			continue
		}
		if methods[rt.Path] == nil {
			paths = append(paths, rt.Path)
		}
		methods[rt.Path] = append(methods[rt.Path], rt.Method)
		if rt.Method == http.MethodGet {
			methods[rt.Path] = append(methods[rt.Path], http.MethodHead) // net/http serves HEAD with GET
		}
	}
	mux := http.NewServeMux()
	for _, p := range paths {
		allow := strings.Join(methods[p], ", ")
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			httpapi.WriteError(w, api.Errorf(api.KindInvalidArgument, "%s %s: this path is served with %s only", r.Method, r.URL.Path, allow).
				WithCause(httpapi.ErrMethodNotAllowed))
		})
	}
	return mux
}

// closeServices is the hard stop of every service, in reverse order: a
// service may use one mounted before it until it is closed itself.
func (s *Server) closeServices() {
	for _, svc := range slices.Backward(s.services) {
		svc.Close()
	}
}

func (s *Server) limits() api.Limits {
	l := api.Limits{MaxJSONBodyBytes: httpapi.MaxJSONBodyBytes,
		MaxIdempotencyKeys: s.idem.max, IdempotencyKeySeconds: int(s.idem.ttl / time.Second)}
	for _, svc := range s.services {
		svc.Limits(&l)
	}
	return l
}

// Routes lists "METHOD PATH" of every served route, for the documentation test.
func (s *Server) Routes() []string {
	out := make([]string, 0, len(s.routes))
	for _, rt := range s.routes {
		out = append(out, rt.Method+" "+rt.Path)
	}
	return out
}

// RouteTable is a copy of the route table in the order it is served: the
// system's routes, then each service's. docs/api.md's route table is
// generated from it.
func (s *Server) RouteTable() []Route { return slices.Clone(s.routes) }

// Handler is the daemon's whole HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

var errUnauthenticated = api.Errorf(api.KindUnauthenticated,
	"missing or wrong bearer token").WithHint("send Authorization: Bearer <token> with the Space's current token")

// presented is the token a request shows: its bearer, or on a route that
// takes it (apiKey) its X-API-Key, which computer-server's clients send.
func presented(r *http.Request, apiKey bool) (string, bool) {
	if apiKey {
		if k := r.Header.Get(HeaderAPIKey); k != "" {
			return strings.TrimSpace(k), true
		}
	}
	tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(tok), found
}

// authenticate checks the token a request shows and returns its generation.
func (s *Server) authenticate(r *http.Request, apiKey bool) (uint64, bool) {
	tok, found := presented(r, apiKey)
	if !found && s.auth.Required() {
		return 0, false
	}
	return s.auth.Check(tok)
}

// failedAuth counts a refused credential and holds its answer back (see
// AuthFailureDelay). The log line is the request's own (status 401, kind
// unauthenticated) or, in band, authenticateInBand's; neither holds the
// credential.
func (s *Server) failedAuth(ctx context.Context) {
	s.metrics.Counter(metricAuthFailures).Add(1)
	s.cfg.AuthFailurePause(ctx)
}

// authenticateInBand is Host.Authenticate: the in-band check of a caller
// that presented no credentials on the upgrade of an InBandAuth route.
func (s *Server) authenticateInBand(ctx context.Context, tok string) (context.Context, context.CancelCauseFunc, error) {
	caller := CallerOf(ctx)
	gen, ok := s.auth.Check(tok)
	if !ok {
		s.log.LogAttrs(ctx, slog.LevelWarn, "authentication failed", slog.String("route", caller.route), slog.String("via", "in-band message"))
		s.failedAuth(ctx)
		return nil, nil, errUnauthenticated
	}
	caller.Pending, caller.Generation = false, gen
	promoteConn(ctx)
	sctx, end := s.auth.Session(withCaller(ctx, caller), gen)
	return sctx, end, nil
}

// pendingUpgrade reports whether r may reach its InBandAuth route before
// it authenticated: a WebSocket upgrade that presents no credentials at
// all, to a daemon that needs them.
func (s *Server) pendingUpgrade(r *http.Request, rt Route) bool {
	if !rt.InBandAuth || !s.auth.Required() {
		return false
	}
	if _, found := presented(r, rt.APIKey); found {
		return false
	}
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

// headerHasToken reports whether a comma-separated header holds token
// (case-insensitive), as "Connection: keep-alive, Upgrade" does.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// authorize finds the caller of a non-public route: the token's holder,
// or, on a route that accepts tickets of a scope, the bearer of a valid
// ticket of that scope. A ticket is honoured (its limits applied) even
// when the daemon needs no token.
func (s *Server) authorize(r *http.Request, rt Route) (Caller, error) {
	if pc, ok := relayedConn(r.Context()); ok {
		return s.authorizeRelayed(r, pc, rt)
	}
	bearer, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	bearer = strings.TrimSpace(bearer)
	if hasBearer && IsTicket(bearer) && (rt.Ticket != "" || s.auth.Required()) {
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
		return Caller{Generation: gen, Ticket: &t}, nil
	}
	gen, ok := s.authenticate(r, rt.APIKey)
	if !ok {
		return Caller{}, errUnauthenticated
	}
	return Caller{Generation: gen}, nil
}

// checkBrowser refuses what a web page could make a browser send: without
// a token, a Host that is not a loopback name (a DNS-rebinding page, whose
// name now points at 127.0.0.1); and, token or not, an Origin other than
// the daemon's own. Clients that are no browser send no Origin.
//
// On a principal's connection (ServeConn) the grant authenticated the
// caller, so the Host check does not apply; the daemon's own origin is then
// the relay's, whose scheme and host the relay forwards (r.TLS is the
// tunnel's, never the browser's).
func (s *Server) checkBrowser(r *http.Request) error {
	host, secure := r.Host, r.TLS != nil
	_, relayed := relayedConn(r.Context())
	if relayed {
		host, secure = forwardedOrigin(r)
	}
	if !relayed && !s.auth.Required() && !loopback.Host(r.Host) {
		return api.Errorf(api.KindForbidden,
			"Host %q is not a loopback name: a cua-spacesd without a token answers only to localhost and loopback addresses", r.Host).
			WithHint("reach the daemon as 127.0.0.1 or localhost, or give it a token (--token-file)")
	}
	if origin := r.Header.Get("Origin"); origin != "" && !loopback.SameOrigin(origin, host, secure) {
		return api.Errorf(api.KindForbidden,
			"requests from the web page %q are refused: only the daemon's own pages may call it from a browser", origin).
			WithHint("call the daemon from a program (no Origin header), or through cua-bridge")
	}
	return nil
}

// checkBody refuses a request whose declared content type is not the
// route's: a JSON route takes application/json, a bulk route
// application/octet-stream, even with an empty body. Neither can be sent to
// another origin by a web page without a CORS pre-check, which the daemon
// never grants.
func checkBody(r *http.Request, want string) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && strings.EqualFold(mt, want) {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return api.Errorf(api.KindInvalidArgument, "%s %s takes Content-Type %s, got %s", r.Method, r.URL.Path, want, ct).
		WithCause(httpapi.ErrUnsupportedMediaType)
}

// wrap adds the browser checks, auth, the session bound to the token, the
// body's content type, feature gating, one log line and metrics around a
// route's handler.
func (s *Server) wrap(rt Route) http.Handler {
	label := rt.Method + " " + rt.Path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK, shutdown: s.streams}
		defer func() {
			d := time.Since(start)
			s.metrics.observe(label, rec.status, d)
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("route", label), slog.Int("status", rec.status),
				slog.String("kind", string(rec.kind)), slog.Duration("duration", d))
		}()
		if err := s.checkBrowser(r); err != nil {
			refuse(rec, r, err)
			return
		}
		if rt.Public {
			// A public route needs no token, but a caller that shows the
			// right one is a client, not an anonymous prober.
			if s.auth.Required() && r.Header.Get("Authorization") != "" {
				if _, ok := s.authenticate(r, false); ok {
					promoteConn(r.Context())
				}
			}
		} else if _, relayed := relayedConn(r.Context()); !relayed && s.pendingUpgrade(r, rt) {
			// The handler authenticates in band (Host.Authenticate); its
			// stream ends at the start of a shutdown all the same, and
			// its connection counts as anonymous until then.
			markPendingAuth(r.Context())
			ctx, cancel := context.WithCancelCause(withCaller(r.Context(), Caller{Pending: true, route: label}))
			defer cancel(nil)
			defer rec.stopStream()
			rec.endStream = func() { cancel(ErrShutdown) }
			r = r.WithContext(ctx)
		} else {
			caller, err := s.authorize(r, rt)
			if err != nil {
				if api.KindOf(err) == api.KindUnauthenticated {
					s.failedAuth(r.Context())
				}
				refuse(rec, r, err)
				return
			}
			gen := caller.Generation
			if caller.Ticket == nil {
				// Only the token makes a connection durable. A ticket's
				// stays anonymous (evictable, quick to idle out) once its
				// request ends: a view link, which may reach anyone, must
				// not hold connection slots the token's holder needs.
				promoteConn(r.Context())
			}
			ctx, release := s.auth.Session(withCaller(r.Context(), caller), gen)
			defer release(nil)
			defer rec.stopStream()
			// Ending the session ends the request's context: a stream does
			// so when the shutdown starts.
			rec.endStream = func() { release(ErrShutdown) }
			r = r.WithContext(ctx)
		}
		if rt.Body != "" {
			if err := checkBody(r, rt.Body); err != nil {
				refuse(rec, r, err)
				return
			}
		}
		if rt.Feature != "" {
			if st := s.featureStatus(r.Context(), rt.Feature); !st.Supported {
				refuse(rec, r, api.CapabilityMissing(rt.Feature, st.Limitation))
				return
			}
		}
		if rt.Stream && rec.endStream != nil {
			// An answer that streams without a hijack (SSE) would hold a
			// graceful shutdown to its end: it ends as a WebSocket does.
			rec.unlink = context.AfterFunc(rec.shutdown, rec.endStream)
		}
		if rt.Idempotent && r.Header.Get(api.HeaderIdempotencyKey) != "" {
			s.idem.serve(rec, r, label, rt.Body, rt.Handler)
			return
		}
		rt.Handler(rec, r)
	})
}

// refuse answers a request before its handler ran. A body it carries is
// not wanted, so the connection closes after the answer: otherwise the
// server would read the body to its end first, and a client that stalls
// mid-body would never get the answer.
func refuse(w http.ResponseWriter, r *http.Request, err error) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	httpapi.WriteError(w, err)
}

func (s *Server) featureStatus(ctx context.Context, f api.Feature) api.FeatureStatus {
	p, ok := s.probes[f]
	if !ok {
		return api.FeatureStatus{Limitation: "this build of cua-spacesd does not implement " + string(f) + " yet"}
	}
	return p(ctx)
}

// Capabilities computes (or returns the recent) capabilities of this guest.
func (s *Server) Capabilities(ctx context.Context) *api.Capabilities {
	c := *s.cachedCapabilities(ctx)
	// What a service reports (the relay's state) changes by the second
	// and is cheap: it is not cached.
	for _, svc := range s.services {
		if r, ok := svc.(CapabilitiesReporter); ok {
			r.ReportCapabilities(&c)
		}
	}
	return &c
}

func (s *Server) cachedCapabilities(ctx context.Context) *api.Capabilities {
	s.capsMu.Lock()
	defer s.capsMu.Unlock()
	if s.caps != nil && time.Since(s.capsStamp) < capabilitiesCacheTTL {
		return s.caps
	}
	host, _ := os.Hostname()
	c := &api.Capabilities{
		Daemon:          api.DaemonName,
		Version:         s.cfg.Version,
		ProtocolVersion: api.ProtocolVersion,
		OS:              runtime.GOOS,
		Arch:            runtime.GOARCH,
		Hostname:        host,
		DisplayServer:   "none",
		Display:         s.cfg.Display,
		Limits:          s.limits(),
		Features:        make(map[api.Feature]api.FeatureStatus, len(api.AllFeatures)),
	}
	if s.cfg.Display != "" {
		c.DisplayServer = "x11"
	}
	for _, f := range api.AllFeatures {
		c.Features[f] = s.featureStatus(ctx, f)
	}
	s.caps, s.capsStamp = c, time.Now()
	return c
}

// Serve serves on ln until ctx ends, then shuts down: gracefully for up to
// GracefulShutdownTimeout, then hard (connections closed, services closed).
// Gracefully means that running requests finish with their answers (their
// contexts stay live) while streams end at once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Requests' contexts end only with the hard shutdown: ending them with
	// ctx would kill a running exec the moment a graceful shutdown starts.
	base, hardStop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hardStop(ErrShutdown)
	defer s.endStreams()
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: readHeaderTimeout,
		// The authenticated idle timeout; anonymous connections are closed
		// sooner by the tracker, which also bounds their number.
		IdleTimeout: s.conns.limits.AuthenticatedIdle,
		ConnState:   s.conns.connState,
		ConnContext: withConn,
		// A relayed connection is never *tls.Conn: the TLS of its tunnel
		// ended at the service that handed it over.
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return base },
	}
	ln = s.conns.listener(ln)
	if s.cfg.TLS != nil {
		// Outside the tracker: http.Server must see the *tls.Conn (for
		// r.TLS and the handshake's deadline), and the tracker unwraps it.
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go s.auth.Watch(watchCtx)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// The same http.Server serves the relayed connections, so Shutdown
	// drains them and Close ends them with the rest.
	go func() { _ = srv.Serve(s.relayed) }()
	defer s.relayed.Close()
	select {
	case err := <-errc:
		s.relayed.Close()
		s.closeServices()
		return err
	case <-ctx.Done():
	}
	s.endStreams()
	graceful, cancel := context.WithTimeout(context.Background(), GracefulShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(graceful)
	if err != nil {
		_ = srv.Close()
	}
	// Shutdown closed it unless its Serve had not started yet: a service
	// handing over a connection must not wait for it past this point.
	s.relayed.Close()
	hardStop(ErrShutdown)
	s.closeServices()
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("graceful shutdown ran out of time; connections closed")
		return nil
	}
	return err
}

// recorder remembers the status and error kind of an answer for the log line.
type recorder struct {
	http.ResponseWriter
	status      int
	kind        api.Kind
	wroteHeader bool

	// shutdown ends when the server starts shutting down; once hijacked,
	// the request's endStream runs then (stopStream undoes that link).
	shutdown  context.Context
	endStream func()
	unlink    func() bool
}

// RecordKind is how httpapi.WriteError tells the log line the error's kind.
func (r *recorder) RecordKind(k api.Kind) { r.kind = k }

func (r *recorder) stopStream() {
	if r.unlink != nil {
		r.unlink()
	}
}

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's extras.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack hands the connection to a WebSocket upgrade.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.status, r.wroteHeader = http.StatusSwitchingProtocols, true
	if r.endStream != nil && r.unlink == nil {
		r.unlink = context.AfterFunc(r.shutdown, r.endStream)
	}
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// Flush sends buffered bytes of a streamed answer.
func (r *recorder) Flush() { _ = http.NewResponseController(r.ResponseWriter).Flush() }
