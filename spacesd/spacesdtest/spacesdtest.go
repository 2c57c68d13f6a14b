// Package spacesdtest runs a real cua-spacesd server in a test process, on a
// loopback port with a fresh token, and hands back a client of it.
package spacesdtest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/process"
	"github.com/trycua/cua-spacesd/spacesd/daemon"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/mcpsvc"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// Daemon is a running test daemon.
type Daemon struct {
	URL    string
	Token  string
	Client *client.Client
	Server *server.Server
	// Auth is what the daemon checks credentials with: a test rotates
	// its token there.
	Auth *server.Auth

	stop func()
}

// Stop shuts the daemon down now (as SIGTERM would), before the test
// ends: a test then starts another on the same Addr and Token, as a
// restarted daemon.
func (d *Daemon) Stop() { d.stop() }

// Options adjust the test daemon.
type Options struct {
	// Auth replaces the default fixed random token (e.g. a file-backed one).
	Auth *server.Auth
	// NoToken serves without a token, as a daemon bound to loopback may.
	NoToken bool
	// Display is the X display for the desktop features ("" = none).
	Display string
	// Logger receives the daemon's logs; default discards them.
	Logger *slog.Logger
	// Process configures the process manager (limits, containment).
	Process process.Options
	// Stream adjusts the streams; the media UDP socket defaults to a free
	// port on 127.0.0.1, so that test daemons never share one.
	Stream streamsvc.Options
	// AuthFailurePause is the pause of a refused credential. The test
	// daemon answers refusals at once by default (tests refuse hundreds of
	// tokens on purpose); a test of the pause itself sets its own.
	AuthFailurePause func(context.Context)
	// TLS serves HTTPS and WSS with this configuration (the URL is then
	// https://); ClientTLS is how the Daemon's Client trusts it.
	TLS       *tls.Config
	ClientTLS client.TLS
	// MCP declares MCP services and adjusts the MCP endpoint.
	MCP mcpsvc.Options
	// Addr is where to listen (default a free loopback port), and Token
	// the token (default a fresh one): those of a stopped daemon make
	// this one its restart.
	Addr, Token string
	// Now is the clock of the idempotency keys (nil: time.Now).
	Now func() time.Time
	// Relay attaches the daemon to a relay (its flags, its state dir,
	// a fake clock); Relay.StateDir defaults to Files.StateDir.
	Relay relaysvc.Options
	// Files adjusts the files service (its state dir).
	Files filesvc.Options
}

// Token returns a fresh random token.
func Token() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Start serves a daemon until the test ends.
func Start(t testing.TB, opts Options) *Daemon {
	t.Helper()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	tok := ""
	auth := opts.Auth
	if auth == nil {
		if !opts.NoToken {
			tok = opts.Token
			if tok == "" {
				tok = Token()
			}
		}
		auth = server.NewAuth(tok, log)
	}
	if opts.Stream.UDPAddr == "" {
		opts.Stream.UDPAddr = "127.0.0.1:0"
	}
	if opts.AuthFailurePause == nil {
		opts.AuthFailurePause = func(context.Context) {}
	}
	srv, err := daemon.New(daemon.Options{Version: "test", Auth: auth, Logger: log, Display: opts.Display, Process: opts.Process, Stream: opts.Stream,
		AuthFailurePause: opts.AuthFailurePause, TLS: opts.TLS, MCP: opts.MCP, Now: opts.Now, Relay: opts.Relay, Files: opts.Files})
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, ln)
	}()
	stop := func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	url := "http://" + ln.Addr().String()
	var copts []client.Option
	if opts.TLS != nil {
		url = "https://" + ln.Addr().String()
		copts = append(copts, client.WithTLS(opts.ClientTLS))
	}
	c, err := client.New(url, tok, copts...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return &Daemon{URL: url, Token: tok, Client: c, Server: srv, Auth: auth, stop: stop}
}

// RelayStatus is the daemon's relay attachment (GET /v1/relay).
func (d *Daemon) RelayStatus(ctx context.Context) (api.RelayStatus, error) {
	var st api.RelayStatus
	err := d.Client.JSON(ctx, http.MethodGet, api.PathRelay, nil, nil, &st)
	return st, err
}

// AttachRelay attaches the daemon to a relay (PUT /v1/relay) and answers
// its status once attached or req.WaitMS passed.
func (d *Daemon) AttachRelay(ctx context.Context, req api.RelayAttachRequest) (api.RelayStatus, error) {
	var st api.RelayStatus
	err := d.Client.JSON(ctx, http.MethodPut, api.PathRelay, nil, req, &st)
	return st, err
}
