package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
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
)

// HTTPOptions configure the streamable HTTP handler.
type HTTPOptions struct {
	// Token is the bearer token every request must carry.
	Token string
	// Loopback: the server is bound to a loopback address, so a request
	// whose Origin or Host names another host is a DNS-rebinding attempt.
	Loopback bool
}

// HTTPHandler serves MCP at /mcp: Host/Origin check (403), bearer (401),
// the gate (JSON-RPC errors), then the SDK's streamable handler.
func (b *Bridge) HTTPHandler(o HTTPOptions) http.Handler {
	stream := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return b.server }, &sdk.StreamableHTTPOptions{
		Logger: b.log,
		// The gate enforces MaxMessageBytes already; the SDK's own cap stays
		// above it so the gate's JSON-RPC answer is the one a client sees.
		MaxRequestBodyBytes: 2 * MaxMessageBytes,
	})
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
			if v := b.gate.Check(body, r.Header.Get(sessionHeader) == ""); v != nil {
				writeViolation(w, v, v.HTTPStatus())
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		stream.ServeHTTP(w, r)
	})
	return mux
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
