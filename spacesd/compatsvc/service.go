// Package compatsvc serves the command bus of Cua's earlier guest server,
// computer-server (GET /ws, POST /cmd, GET /status), on cua-spacesd's own
// port, so that the programs written against its published clients (the
// npm package @trycua/computer, the Python cua-computer) drive a Space
// unchanged.
//
// Every command maps onto a capability the daemon already has
// (capabilities/process, files, desktop), one file per group of commands;
// none is a second implementation. docs/computer-server.md lists each
// command and how it maps.
package compatsvc

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/a11y"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/httpapi"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// Routes of the bus, as computer-server names them.
const (
	PathWS     = "/ws"
	PathCmd    = "/cmd"
	PathStatus = "/status"
)

// Limits of the bus.
const (
	// MaxMessageBytes bounds one command, over the WebSocket or as the body
	// of POST /cmd. The clients send a file of up to 5 MB in one
	// write_bytes (base64: 6.7 MB) and cut bigger ones into 1 MB chunks.
	MaxMessageBytes = 16 << 20
	// MaxReadBytes bounds the bytes one read_bytes or read_text answers;
	// the clients read bigger files in chunks of 1 MB.
	MaxReadBytes = 32 << 20
	// maxAuthMessageBytes bounds the first message of a WebSocket that
	// has not authenticated yet: an authenticate message is small, and
	// nobody unauthenticated makes the daemon hold 16 MB.
	maxAuthMessageBytes = 64 << 10
	// AuthTimeout is how long a WebSocket that must authenticate in band
	// has to send its authenticate message (the clients send it at once).
	AuthTimeout = 10 * time.Second
	// commandQueueDepth bounds the commands a WebSocket client may send
	// ahead of the answers: past it the daemon stops reading, and the
	// client's sends wait.
	commandQueueDepth = 4
	// heldReleaseTimeout bounds releasing what a gone client left held.
	heldReleaseTimeout = 5 * time.Second
)

// Metric names of the bus.
const (
	metricCommands = "cua_spacesd_compat_commands_total"
	metricFailures = "cua_spacesd_compat_command_failures_total"
)

// protocolVersion and packageVersion are what the version command answers:
// computer-server's protocol 1, and this daemon's version.
const protocolVersion = 1

// Service serves the computer-server bus.
type Service struct {
	procs   *process.Manager
	desk    *desktop.Desktop
	a11y    *a11y.A11y // nil: no widget trees
	version string
	host    server.Host
	log     *slog.Logger
	table   map[string]command

	commands, failures server.Counter

	// cmdConn holds what POST /cmd callers pressed (mouse_down, key_down):
	// each call is a request of its own, so they share one set, released
	// at Close.
	cmdConn *conn
}

// New returns the bus over the daemon's process manager and desktop
// (which the process and desktop services own and close).
func New(procs *process.Manager, desk *desktop.Desktop, acc *a11y.A11y, version string) server.NewService {
	return func(h server.Host) (server.Service, error) {
		s := &Service{procs: procs, desk: desk, a11y: acc, version: version, host: h, log: h.Log.With("service", "computer-server"),
			table:    commandTable(),
			commands: h.Metrics.Counter(metricCommands), failures: h.Metrics.Counter(metricFailures)}
		s.cmdConn = s.newConn()
		return s, nil
	}
}

// Routes of the bus. /ws may authenticate in band (the clients' first
// message); /ws and /cmd take the token as X-API-Key, as the clients send
// it; every route takes it as a bearer too.
func (s *Service) Routes() []server.Route {
	return []server.Route{
		{Method: http.MethodGet, Path: PathWS, APIKey: true, InBandAuth: true, Roles: server.EditorRoles(), Handler: s.serveWS},
		{Method: http.MethodPost, Path: PathCmd, APIKey: true, Body: server.BodyJSON, Idempotent: true, Roles: server.EditorRoles(), Handler: s.serveCmd},
		{Method: http.MethodGet, Path: PathStatus, APIKey: true, Roles: server.EditorRoles(), Handler: s.status},
	}
}

// Features: the bus serves none of its own; each command needs the
// feature of the capability it maps onto, which answers capability_missing
// itself.
func (s *Service) Features() map[api.Feature]server.Probe { return nil }

// Limits of the bus are its own (MaxMessageBytes, MaxReadBytes), not the
// contract's.
func (s *Service) Limits(*api.Limits) {}

// Close releases what POST /cmd callers left held.
func (s *Service) Close() { s.cmdConn.close() }

// statusAnswer is GET /status, as computer-server answers it.
type statusAnswer struct {
	Status   string   `json:"status"`
	OSType   string   `json:"os_type"`
	Features []string `json:"features"`
}

func (s *Service) status(w http.ResponseWriter, r *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, statusAnswer{Status: "ok", OSType: runtime.GOOS, Features: []string{}})
}

// conn is what one client of the bus keeps between its commands: the
// buttons and keys it holds down (mouse_down, key_down), released when it
// goes away.
type conn struct {
	svc  *Service
	held *desktop.Held
}

func (s *Service) newConn() *conn { return &conn{svc: s, held: s.desk.NewHeld()} }

func (c *conn) close() {
	ctx, cancel := context.WithTimeout(context.Background(), heldReleaseTimeout)
	defer cancel()
	if err := c.held.Close(ctx); err != nil {
		c.svc.log.Warn("release the buttons and keys a bus client held", "err", err)
	}
}

// run runs one bound command and answers it, counted and logged (the
// command's name, never its params).
func (s *Service) run(ctx context.Context, c *conn, cl call) []byte {
	start := time.Now()
	res, err := cl.run(ctx, c)
	var answer []byte
	if err == nil {
		answer, err = success(res)
	}
	if err != nil {
		answer = failure(err, res)
	}
	s.observe(ctx, cl.name, err, time.Since(start))
	return answer
}

// observe counts and logs one command.
func (s *Service) observe(ctx context.Context, name string, err error, d time.Duration) {
	s.commands.Add(1)
	attrs := []slog.Attr{slog.String("command", name), slog.Bool("success", err == nil), slog.Duration("duration", d)}
	if err != nil {
		s.failures.Add(1)
		attrs = append(attrs, slog.String("kind", string(api.KindOf(err))))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "command", attrs...)
}
