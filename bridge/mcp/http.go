package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trycua/cua-spacesd/internal/loopback"
)

// HTTP bounds. No deadline covers a whole request: a tool call may run for
// 900 s or more (a transfer, a build), and its SSE answer stays open as long.
const (
	DefaultListen     = "127.0.0.1:3210"
	MCPPath           = "/mcp"
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 5 * time.Minute
	shutdownTimeout   = 10 * time.Second
	sessionHeader     = "Mcp-Session-Id"
	versionHeader     = "Mcp-Protocol-Version"
	methodHeader      = "Mcp-Method"
	nameHeader        = "Mcp-Name"
)

// Session bounds. Sessions cost about 10 KB each and clients do not always
// end theirs (DELETE): 2,000 of them once stayed open for good.
const (
	// MaxSessions bounds the MCP sessions open at once. A client holds one
	// or a few; hundreds mean sessions nobody ends, which idle expiry
	// reclaims.
	MaxSessions = 256
	// SessionIdleTimeout ends a session that has had no request for that
	// long (the SDK's SessionTimeout: a running call holds it open). A
	// later request with its id answers 404, the transport's word for
	// "start a new session", and a conforming client initializes again.
	SessionIdleTimeout = time.Hour
	// CodeTooManySessions is the JSON-RPC error of an initialize over
	// MaxSessions (-32000..-32099 are the implementation's own).
	CodeTooManySessions = -32000
)

// HTTPOptions configure the streamable HTTP handler.
type HTTPOptions struct {
	// Token is the bearer token every request must carry.
	Token string
	// Loopback: the server is bound to a loopback address, so a request
	// whose Origin or Host names another host is a DNS-rebinding attempt.
	Loopback bool
	// MaxSessions and SessionIdle replace MaxSessions and
	// SessionIdleTimeout when set (tests).
	MaxSessions int
	SessionIdle time.Duration
}

// HTTPHandler serves MCP at /mcp: Host/Origin check (403), bearer (401),
// the gate (JSON-RPC errors), the session cap (503), then the SDK's
// streamable handler: the stateful one for the revisions with sessions,
// a stateless one for ModernVersion requests, which have none (serving
// them statefully would open a session per request that nobody ends).
func (b *Bridge) HTTPHandler(o HTTPOptions) http.Handler {
	if o.MaxSessions <= 0 {
		o.MaxSessions = MaxSessions
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = SessionIdleTimeout
	}
	stream := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return b.server }, &sdk.StreamableHTTPOptions{
		Logger: b.log,
		// The gate enforces MaxMessageBytes already; the SDK's own cap stays
		// above it so the gate's JSON-RPC answer is the one a client sees.
		MaxRequestBodyBytes: 2 * MaxMessageBytes,
		SessionTimeout:      o.SessionIdle,
	})
	stateless := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return b.server }, &sdk.StreamableHTTPOptions{
		Logger:              b.log,
		MaxRequestBodyBytes: 2 * MaxMessageBytes,
		Stateless:           true,
		// Each request is its own session: a client cancels a call by
		// closing its stream, and that must reach the tool.
		PropagateRequestCancellation: true,
	})
	slots := &sessionSlots{max: o.MaxSessions, live: b.sessionCount}
	want := sha256.Sum256([]byte(o.Token))
	mux := http.NewServeMux()
	mux.HandleFunc(MCPPath, func(w http.ResponseWriter, r *http.Request) {
		if o.Loopback && (!loopback.Host(r.Host) || !loopbackOrigin(r.Header.Get("Origin"))) {
			http.Error(w, "forbidden: Origin and Host must be loopback for a loopback bridge", http.StatusForbidden)
			return
		}
		// Hash both sides so the comparison is constant-time whatever the lengths.
		got := sha256.Sum256([]byte(bearer(r)))
		if o.Token == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cua-bridge"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		version := r.Header.Get(versionHeader)
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageBytes+1))
			if err != nil {
				writeViolation(w, &Violation{Code: CodeParseError, Message: "read body: " + err.Error()}, http.StatusBadRequest)
				return
			}
			if len(body) > MaxMessageBytes {
				writeViolation(w, &Violation{Code: CodeInvalidRequest, Message: "message is over the 1 MiB limit"}, http.StatusRequestEntityTooLarge)
				return
			}
			v, msgVersion := b.gate.Check(body, Session{
				Version: version,
				Missing: r.Header.Get(sessionHeader) == "",
				Headers: &MethodHeaders{Method: r.Header.Get(methodHeader), Name: r.Header.Get(nameHeader)},
			})
			if v != nil {
				writeViolation(w, v, v.HTTPStatus())
				return
			}
			version = msgVersion
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			// Past the gate, a POST of the revisions with sessions and
			// without a session id is an initialize: it opens a session.
			if !IsModern(version) && r.Header.Get(sessionHeader) == "" {
				release, ok := slots.reserve()
				if !ok {
					b.log.Warn("MCP session refused: too many open", "max", o.MaxSessions)
					writeViolation(w, &Violation{Code: CodeTooManySessions, Message: fmt.Sprintf(
						"too many MCP sessions: %d are open, the most this bridge keeps; end unused ones (DELETE %s with their %s) or wait, a session idle for %v ends on its own",
						o.MaxSessions, MCPPath, sessionHeader, o.SessionIdle)}, http.StatusServiceUnavailable)
					return
				}
				defer release()
			}
		}
		if IsModern(version) {
			stateless.ServeHTTP(w, r)
			return
		}
		stream.ServeHTTP(w, r)
	})
	return mux
}

// sessionSlots admits new sessions up to max. An initialize holds a slot
// while it runs, before its session is counted live, so that concurrent
// ones cannot overshoot (for that moment it is counted twice: the cap errs
// on the safe side).
type sessionSlots struct {
	max  int
	live func() int

	mu      sync.Mutex
	pending int
}

func (s *sessionSlots) reserve() (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live()+s.pending >= s.max {
		return nil, false
	}
	s.pending++
	return func() {
		s.mu.Lock()
		s.pending--
		s.mu.Unlock()
	}, true
}

// sessionCount is the number of MCP sessions open.
func (b *Bridge) sessionCount() int {
	n := 0
	for range b.server.Sessions() {
		n++
	}
	return n
}

func writeViolation(w http.ResponseWriter, v *Violation, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(v.Response())))
	w.WriteHeader(status)
	_, _ = w.Write(v.Response())
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// loopbackOrigin accepts no Origin (a non-browser client) or a loopback one.
func loopbackOrigin(origin string) bool { return origin == "" || loopback.Origin(origin) }

// Serve serves h on ln until ctx ends, then shuts down gracefully.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		// ReadTimeout and WriteTimeout stay 0: a tool call's answer may take
		// 900 s or more, and the idle and header timeouts bound the rest.
		IdleTimeout: idleTimeout,
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
