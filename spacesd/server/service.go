package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/trycua/cua-spacesd/api"
)

// A Service is one capability's share of the daemon: its routes, how its
// features are probed, the limits it enforces, and what it stops at the
// hard shutdown. The server mounts services; it knows none of them, so a new
// capability (streaming, MCP, the computer-server bus, the relay) is a new
// Service handed in through Config.Services, not an edit of the server.
type Service interface {
	// Routes are the service's rows of the route table.
	Routes() []Route
	// Features are the probes of the features the service serves. A
	// feature nobody probes answers "not implemented by this build".
	Features() map[api.Feature]Probe
	// Limits fills in the limits the service enforces.
	Limits(*api.Limits)
	// Close is the hard shutdown: stop what the service started (running
	// processes, connections to the display). Services close in the
	// reverse order of Config.Services, after the last request ended.
	Close()
}

// NewService builds a Service from what the daemon lends every service.
type NewService func(Host) (Service, error)

// Route is one row of the route table. Every route the daemon serves is a
// row, and docs/api.md documents each one (a test compares the two).
type Route struct {
	Method string
	// Path is a net/http pattern ("/v1/processes/{id}").
	Path string
	// Feature is the feature the route needs; the server answers
	// capability_missing before Handler runs when it is unsupported.
	Feature api.Feature
	// Body is the content type a request body must declare. JSON routes
	// take application/json and bulk routes application/octet-stream:
	// neither is a type a web page may send to another origin without
	// asking first, so no page can reach a route by a plain form post.
	Body string
	// Public routes need no token: GET /health, and the viewer page's
	// static files.
	Public bool
	// APIKey routes also take the token as X-API-Key (HeaderAPIKey), the
	// header the clients of computer-server send it in.
	APIKey bool
	// InBandAuth routes are WebSocket streams whose clients may present
	// the token after the upgrade, in a message of their own (as
	// computer-server's "authenticate"). An upgrade request that carries
	// no credentials then reaches the handler with CallerOf(ctx).Pending
	// set, and the handler passes Host.Authenticate before it serves
	// anything. Wrong credentials are refused at the upgrade all the same,
	// and a request that is no upgrade needs them as on any route.
	InBandAuth bool
	// Stream routes answer with a stream that lasts as long as its client
	// keeps it (server-sent events) rather than a response: the request's
	// context ends when a shutdown starts, as a WebSocket stream's does,
	// instead of holding the graceful shutdown to its timeout.
	Stream bool
	// Ticket is the scope of the tickets the route accepts besides the
	// token (TicketScopeStream); "" = the token only. The handler finds
	// the ticket's claims with CallerOf and enforces its target and mode.
	Ticket string
	// Idempotent routes change something, and take an Idempotency-Key
	// (see idempotency.go): a repeat of a call with the same key answers
	// the first call's answer instead of running again.
	Idempotent bool
	// Roles are the roles of a Principal (besides RoleOwner, which may
	// call every route) that may call the route; none: the owner only.
	Roles   []Role
	Handler http.HandlerFunc
}

// Request body content types of Route.Body.
const (
	BodyJSON  = "application/json"
	BodyBytes = "application/octet-stream"
)

// Probe reports the current status of one feature.
type Probe func(ctx context.Context) api.FeatureStatus

// Host is what the daemon lends a service: narrow on purpose, so that a
// service can be built in a test from parts of its own choosing.
type Host struct {
	Log     *slog.Logger
	Metrics Metrics
	// Feature is the current status of any feature, for a route whose
	// request may need a second one (a process started on a PTY).
	Feature func(context.Context, api.Feature) api.FeatureStatus
	// MintTicket signs a ticket under the current token (see Ticket).
	MintTicket func(Ticket) (string, error)
	// Session ties a context that outlives its request (a stream's peer
	// connection) to the token generation of the request that opened it
	// (CallerOf(ctx).Generation): it ends, with cause ErrTokenRotated,
	// when that token is rotated away. end must be called when done.
	Session func(parent context.Context, generation uint64) (ctx context.Context, end context.CancelCauseFunc)
	// Hold is Session for a caller (CallerOf(ctx) of the request that
	// opens it), also ended, with ErrKicked, by a Kick of the person the
	// caller acts for (PersonOf): a stream's viewer must end when its
	// person is unshared, not only when its connection closes.
	Hold func(parent context.Context, c Caller) (ctx context.Context, end context.CancelCauseFunc)
	// Kick ends the held sessions of the persons match names (see
	// Server.Kick): the relay service's part of the relay's Kick.
	Kick func(match func(person string, role Role) bool) int
	// Authenticate checks a token that the caller of an InBandAuth route
	// presented in band (ctx is the request's). A wrong one is logged
	// (never the token), counted and slowed down as every refused request
	// is, and answers kind unauthenticated; the right one answers a
	// context bound to its generation, as Session does (end it when done).
	Authenticate func(ctx context.Context, presented string) (context.Context, context.CancelCauseFunc, error)
	// Handler is the daemon's whole HTTP surface, auth and all, for a
	// service that calls the daemon's own routes in process (the MCP
	// tools, which are the bridge's tools over the daemon itself). It
	// serves once New has returned.
	Handler http.Handler
	// ServeConn serves the daemon's whole handler on a connection whose
	// caller the service already checked (a relayed stream and its
	// grant's person): see Server.ServeConn.
	ServeConn func(c net.Conn, p Principal) error
}

// A CapabilitiesReporter is a Service that adds its state to GET
// /v1/capabilities (the relay its attachment), beyond its features.
type CapabilitiesReporter interface {
	ReportCapabilities(*api.Capabilities)
}

// Metrics is where a service counts what it does.
type Metrics interface {
	// Counter returns the counter of that name, made on first use; the
	// same name always answers the same counter.
	Counter(name string) Counter
	// Gauge reads a value at every scrape.
	Gauge(name string, read func() float64)
}

// Counter is a monotonically growing metric.
type Counter interface{ Add(int64) int64 }

// The counters several services share.
const (
	MetricBytesIn          = "cua_spacesd_bytes_in_total"
	MetricBytesOut         = "cua_spacesd_bytes_out_total"
	MetricProcessesStarted = "cua_spacesd_processes_started_total"
)
