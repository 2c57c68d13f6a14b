package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/internal/loopback"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// HTTP bounds. No deadline covers a whole request: a tool call may run for
// 900 s or more (a transfer, a build), and its SSE answer stays open as long.
const (
	DefaultListen     = "127.0.0.1:3210"
	MCPPath           = "/mcp"
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 5 * time.Minute
	shutdownTimeout   = 10 * time.Second
)

// HTTPOptions configure the streamable HTTP handler.
type HTTPOptions struct {
	// Token is the bearer token every request must carry.
	Token string
	// Loopback: the server is bound to a loopback address, so a request
	// whose Origin or Host names another host is a DNS-rebinding attempt.
	Loopback bool
	// MaxSessions and SessionIdle replace mcpserve's MaxSessions and
	// SessionIdleTimeout when set (tests).
	MaxSessions int
	SessionIdle time.Duration
}

// HTTPHandler serves MCP at /mcp: Host/Origin check (403), bearer (401),
// then the shared handler (the gate, the session cap, the SDK).
func (b *Bridge) HTTPHandler(o HTTPOptions) http.Handler {
	mcpHandler := b.Handler(mcpserve.HTTPOptions{Path: MCPPath, MaxSessions: o.MaxSessions, SessionIdle: o.SessionIdle})
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
		mcpHandler.ServeHTTP(w, r)
	})
	return mux
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
