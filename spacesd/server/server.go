// Package server is cua-spacesd's HTTP surface: the route table, auth,
// feature gating, logging and metrics. Each capability lives in its own
// package under capabilities/; the handlers here only adapt HTTP to them.
package server

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// Shutdown budgets: graceful lets running requests finish, then hard closes.
const (
	GracefulShutdownTimeout = 10 * time.Second
	readHeaderTimeout       = 10 * time.Second
	capabilitiesCacheTTL    = 2 * time.Second
)

// Config is what a Server is built from.
type Config struct {
	Version string
	// Auth decides who may call; nil means no token (loopback only).
	Auth   *Auth
	Logger *slog.Logger
	// Display is the X display the desktop features use ("" = none).
	Display string
	// DataDir holds the daemon's own state.
	DataDir string
}

// Prober reports the current status of one feature.
type Prober func(ctx context.Context) api.FeatureStatus

// Server is one cua-spacesd HTTP surface.
type Server struct {
	cfg     Config
	log     *slog.Logger
	auth    *Auth
	metrics *metrics
	routes  []route
	mux     *http.ServeMux
	groups  []group

	probes map[api.Feature]Prober

	capsMu    sync.Mutex
	caps      *api.Capabilities
	capsStamp time.Time

	// streams ends when a shutdown starts. http.Server.Shutdown neither
	// waits for nor closes hijacked connections, so every WebSocket stream
	// is tied to it (see recorder.Hijack) while plain requests run on.
	streams    context.Context
	endStreams context.CancelFunc
}

// route is one row of the route table. Every route the daemon serves is
// here, and docs/api.md documents each one (a test compares the two).
type route struct {
	method  string
	path    string
	feature api.Feature // required feature; "" for none
	public  bool        // no token needed (GET /health only)
	handler http.HandlerFunc
}

// New builds a Server and its route table.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if cfg.Auth == nil {
		cfg.Auth = NewAuth("", cfg.Logger)
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		auth:    cfg.Auth,
		metrics: newMetrics(),
		probes:  map[api.Feature]Prober{},
	}
	s.streams, s.endStreams = context.WithCancel(context.Background())
	for _, newGroup := range []func(*Server) (group, error){newProcessGroup, newFileGroup, newDesktopGroup} {
		g, err := newGroup(s)
		if err != nil {
			s.closeGroups()
			return nil, err
		}
		s.groups = append(s.groups, g)
		for f, p := range g.probes() {
			s.probes[f] = p
		}
	}
	s.routes = s.routeTable()
	s.mux = http.NewServeMux()
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Unknown routes answer in our envelope too, but only to a caller
		// with the token: without it every route is a 401.
		if _, ok := s.authenticate(r); !ok {
			writeError(w, errUnauthenticated)
			return
		}
		writeError(w, api.Errorf(api.KindNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	return s, nil
}

// group is one capability's share of the daemon: its routes, the probes of
// its features, its limits, and what to stop at shutdown.
type group interface {
	routes() []route
	probes() map[api.Feature]Prober
	limits(*api.Limits)
	close()
}

// routeTable lists every route: the system ones here, each capability's in
// its group's file.
func (s *Server) routeTable() []route {
	rs := s.systemRoutes()
	for _, g := range s.groups {
		rs = append(rs, g.routes()...)
	}
	return rs
}

func (s *Server) closeGroups() {
	for _, g := range s.groups {
		g.close()
	}
}

func (s *Server) limits() api.Limits {
	l := api.Limits{MaxJSONBodyBytes: MaxJSONBodyBytes}
	for _, g := range s.groups {
		g.limits(&l)
	}
	return l
}

// Routes lists "METHOD PATH" of every served route, for the documentation test.
func (s *Server) Routes() []string {
	out := make([]string, 0, len(s.routes))
	for _, rt := range s.routes {
		out = append(out, rt.method+" "+rt.path)
	}
	return out
}

// Handler is the daemon's whole HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// RegisterProbe sets how a feature's status is found.
func (s *Server) RegisterProbe(f api.Feature, p Prober) { s.probes[f] = p }

var errUnauthenticated = api.Errorf(api.KindUnauthenticated,
	"missing or wrong bearer token").WithHint("send Authorization: Bearer <token> with the Space's current token")

// authenticate checks the bearer token and returns its generation.
func (s *Server) authenticate(r *http.Request) (uint64, bool) {
	h := r.Header.Get("Authorization")
	tok, found := strings.CutPrefix(h, "Bearer ")
	if !found && s.auth.Required() {
		return 0, false
	}
	return s.auth.Check(strings.TrimSpace(tok))
}

// wrap adds auth, feature gating, the session bound to the token, one log
// line and metrics around a route's handler.
func (s *Server) wrap(rt route) http.Handler {
	label := rt.method + " " + rt.path
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
		if !rt.public {
			gen, ok := s.authenticate(r)
			if !ok {
				writeError(rec, errUnauthenticated)
				return
			}
			ctx, release := s.auth.Session(r.Context(), gen)
			defer release()
			defer rec.stopStream()
			// Ending the session ends the request's context: a stream does
			// so when the shutdown starts.
			rec.endStream = release
			r = r.WithContext(ctx)
		}
		if rt.feature != "" {
			if st := s.featureStatus(r.Context(), rt.feature); !st.Supported {
				writeError(rec, api.CapabilityMissing(rt.feature, st.Limitation))
				return
			}
		}
		rt.handler(rec, r)
	})
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
// GracefulShutdownTimeout, then hard (connections closed, children killed).
// Gracefully means that running requests finish with their answers (their
// contexts stay live) while streams end at once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Requests' contexts end only with the hard shutdown: ending them with
	// ctx would kill a running exec the moment a graceful shutdown starts.
	base, hardStop := context.WithCancel(context.WithoutCancel(ctx))
	defer hardStop()
	defer s.endStreams()
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	go s.auth.Watch(watchCtx)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.closeGroups()
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
	hardStop()
	s.closeGroups()
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
