// Package mcpsvc serves MCP in the daemon: streamable HTTP at /mcp (feature
// mcp), authenticated like every route, with the built-in service spacesd
// (the bridge's tools over one Space, without the space argument, served
// over the daemon itself), and the MCP servers the image declares in a
// services file, reached through the list_tools and call_tool tools. A
// stdio service is a process of the daemon's process manager, so it lives
// in a cgroup of its own like every other.
package mcpsvc

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// ServerName is the name the daemon gives in initialize.
const ServerName = "cua-spacesd"

// Metrics of the MCP endpoint: how many sessions clients opened (one
// initialize each) and how many are open. A client that keeps its session
// (the bridge does) opens one for many calls.
const (
	MetricSessionsOpened = "cua_spacesd_mcp_sessions_opened_total"
	MetricSessions       = "cua_spacesd_mcp_sessions"
)

// thisSpace names the Space in the built-in tools' messages.
const thisSpace = "this Space"

// Options configure the MCP service.
type Options struct {
	// Version is the daemon's, named in initialize.
	Version string
	// Config declares the image's MCP services; nil declares none.
	Config *Config
	// MaxSessions and SessionIdle replace mcpserve's bounds (tests).
	MaxSessions int
	SessionIdle time.Duration
}

// Service is the daemon's MCP endpoint.
type Service struct {
	host server.Host
	log  *slog.Logger
	opts Options
	self *self
	reg  *registry

	// The MCP server and its transport are built with the first request to
	// /mcp: their tool schemas are most of an idle daemon's heap, and most
	// daemons never see an MCP client of their own.
	mu     sync.Mutex
	ep     *endpoint
	closed bool
}

// endpoint is the MCP server and what serves it over HTTP.
type endpoint struct {
	mcp     *mcpserve.Server
	handler http.Handler
	tokens  *sessionTokens
}

// New builds the MCP service over the daemon's process manager (which
// runs the stdio services).
func New(procs *process.Manager, o Options) server.NewService {
	return func(h server.Host) (server.Service, error) {
		log := h.Log.With("service", "mcp")
		s := &Service{host: h, log: log, opts: o, reg: &registry{declared: map[string]*supervisor{}}}
		if o.Config != nil {
			for _, c := range o.Config.Services {
				s.reg.declared[c.Name] = newSupervisor(c, procs, log, o.Version)
				s.reg.names = append(s.reg.names, c.Name)
			}
		}
		s.self = newSelf(h, log)
		h.Metrics.Counter(MetricSessionsOpened)
		h.Metrics.Gauge(MetricSessions, s.sessionCount)
		return s, nil
	}
}

// endpoint answers the MCP server, built on first use.
func (s *Service) endpoint() (*endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, api.Errorf(api.KindSpacesdNotAvailable, "%v", server.ErrShutdown).WithRetryable(true)
	}
	if s.ep != nil {
		return s.ep, nil
	}
	surface := spacetools.Surface{Space: s.space}
	srv, err := mcpserve.New(mcpserve.Config{
		Name: ServerName, Version: s.opts.Version, Logger: s.log,
		Tools: surface.ServeAll(spacetools.All()),
		Instructions: "Tools over this Space (the desktop this daemon runs in): shell, files, windows, screenshots, input, clipboard. " +
			"list_tools and call_tool reach the other MCP services the Space declares. A failed tool answers isError with structuredContent.error.kind.",
	})
	if err != nil {
		return nil, api.Errorf(api.KindMCP, "build the MCP server: %v", err).WithCause(err)
	}
	// Only calls through this server reach the registry's builtin.
	s.reg.builtin = srv
	s.ep = &endpoint{
		mcp:     srv,
		handler: srv.Handler(mcpserve.HTTPOptions{Path: api.PathMCP, MaxSessions: s.opts.MaxSessions, SessionIdle: s.opts.SessionIdle, Caller: callerOf}),
		tokens:  &sessionTokens{host: s.host, mcp: srv, sessions: map[string]tokenTie{}},
	}
	return s.ep, nil
}

// sessionCount is the number of open MCP sessions (none before the
// endpoint is built).
func (s *Service) sessionCount() float64 {
	s.mu.Lock()
	ep := s.ep
	s.mu.Unlock()
	if ep == nil {
		return 0
	}
	return float64(ep.mcp.SessionCount())
}

// callerOf is who made an MCP request, for its tool calls
// (mcpserve.Call.Caller): the daemon's caller of the request, which the
// server authorised before /mcp's handler ran. A session belongs to its
// person: another's request with its id is refused.
func callerOf(r *http.Request) (string, any) {
	c := server.CallerOf(r.Context())
	person, _ := server.PersonOf(c)
	return person, c
}

// space is the Space of a built-in tool's call: the daemon itself, reached
// as the call's caller (its principal, or the token it showed), once its
// features in need are checked. A call with no caller (none is made
// but through /mcp) reaches it with no credentials at all.
func (s *Service) space(ctx context.Context, mc *mcpserve.Call, need []api.Feature) (*spacetools.Space, error) {
	for _, f := range need {
		if st := s.host.Feature(ctx, f); !st.Supported {
			return nil, api.CapabilityMissing(f, st.Limitation)
		}
	}
	caller, _ := mc.Caller.(server.Caller)
	c, err := s.self.clientFor(caller, bearerOf(mc.Header))
	if err != nil {
		return nil, err
	}
	return &spacetools.Space{ID: thisSpace, Client: c, Services: s.reg.forCall(mc)}, nil
}

// Routes serve MCP's streamable HTTP at /mcp: POST a message, GET a stream
// of the server's messages, DELETE a session.
func (s *Service) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodPost, Path: api.PathMCP, Feature: api.FeatureMCP, Body: server.BodyJSON, Roles: server.EditorRoles(), Handler: s.serve},
		// The standalone SSE stream, which clients hold open for good.
		{Method: http.MethodGet, Path: api.PathMCP, Feature: api.FeatureMCP, Stream: true, Roles: server.EditorRoles(), Handler: s.serve},
		{Method: http.MethodDelete, Path: api.PathMCP, Feature: api.FeatureMCP, Roles: server.EditorRoles(), Handler: s.serve},
	}
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	ep, err := s.endpoint()
	if err != nil {
		httpapi.WriteError(w, api.AsError(err))
		return
	}
	ep.tokens.serve(ep.handler, w, r)
}

// Features: the built-in service is always there.
func (s *Service) Features() map[api.Feature]server.Probe {
	return map[api.Feature]server.Probe{
		api.FeatureMCP: func(context.Context) api.FeatureStatus { return api.FeatureStatus{Supported: true} },
	}
}

// Limits: MCP's bounds are the transport's own (mcpserve).
func (s *Service) Limits(*api.Limits) {}

// Close stops the declared services and closes the in-memory connections,
// then ends the MCP sessions. In that order: a session's end waits for its
// calls in flight, which end only once what they wait on (a service, the
// daemon's own routes) is gone.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	ep := s.ep
	s.mu.Unlock()
	s.reg.close()
	s.self.close()
	if ep != nil {
		ep.mcp.CloseSessions()
		ep.tokens.close()
	}
}
