package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// hostService is a testService that keeps the Host it was mounted with.
type hostService struct {
	testService
	host *server.Host
}

func (s hostService) mount(h server.Host) (server.Service, error) {
	*s.host = h
	return s.testService, nil
}

// pauses is an AuthFailurePause that counts its calls and, while hold is
// set, waits for release: what a test needs to see the answer held back.
type pauses struct {
	n       atomic.Int64
	hold    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func newPauses() *pauses {
	return &pauses{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (p *pauses) pause(ctx context.Context) {
	p.n.Add(1)
	if !p.hold.Load() {
		return
	}
	p.entered <- struct{}{}
	select {
	case <-p.release:
	case <-ctx.Done():
	}
}

func get(t *testing.T, url string, header http.Header) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Every refused credential is counted and its answer held back by the
// pause (AuthFailureDelay in a real daemon); an accepted one is not. The
// X-API-Key header counts only on the routes that take it.
func TestRefusedCredentialsAreSlowed(t *testing.T) {
	const tok = "slow-down-token"
	p := newPauses()
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }
	routes := []server.Route{
		{Method: http.MethodGet, Path: "/test/bearer", Handler: ok},
		{Method: http.MethodGet, Path: "/test/key", APIKey: true, Handler: ok},
	}
	s := serve(t, server.Config{Auth: server.NewAuth(tok, slogDiscard()), AuthFailurePause: p.pause,
		Services: []server.NewService{testService{routes: routes}.mount}})

	cases := []struct {
		name   string
		path   string
		header http.Header
		status int
		paused bool
	}{
		{"right bearer", "/test/bearer", http.Header{"Authorization": {"Bearer " + tok}}, 204, false},
		{"wrong bearer", "/test/bearer", http.Header{"Authorization": {"Bearer nope"}}, 401, true},
		{"no credentials", "/test/bearer", http.Header{}, 401, true},
		{"key on a bearer route", "/test/bearer", http.Header{server.HeaderAPIKey: {tok}}, 401, true},
		{"right key", "/test/key", http.Header{server.HeaderAPIKey: {tok}}, 204, false},
		{"right bearer on a key route", "/test/key", http.Header{"Authorization": {"Bearer " + tok}}, 204, false},
		{"wrong key", "/test/key", http.Header{server.HeaderAPIKey: {"nope"}}, 401, true},
		{"unknown route", "/no/such", http.Header{"Authorization": {"Bearer nope"}}, 401, true},
	}
	for _, tc := range cases {
		before := p.n.Load()
		if got := get(t, s.url()+tc.path, tc.header); got != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.status)
		}
		if paused := p.n.Load() > before; paused != tc.paused {
			t.Errorf("%s: paused %v, want %v", tc.name, paused, tc.paused)
		}
	}

	if t.Failed() {
		return // the pause below would never be entered
	}
	// The answer of a refusal waits for the pause.
	p.hold.Store(true)
	answered := make(chan int, 1)
	go func() { answered <- get(t, s.url()+"/test/bearer", http.Header{"Authorization": {"Bearer nope"}}) }()
	<-p.entered
	select {
	case st := <-answered:
		t.Fatalf("the refusal was answered (%d) while its pause ran", st)
	default:
	}
	close(p.release)
	if st := <-answered; st != http.StatusUnauthorized {
		t.Fatalf("refusal after the pause: %d", st)
	}

	metrics := string(getBody(t, s.url()+"/metrics", http.Header{"Authorization": {"Bearer " + tok}}))
	if !strings.Contains(metrics, "cua_spacesd_auth_failures_total 6") {
		t.Errorf("metrics do not count 6 refused credentials:\n%s", metrics)
	}
}

func getBody(t *testing.T, url string, header http.Header) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// An InBandAuth route lets an upgrade without credentials reach its
// handler as a pending caller, who then authenticates in band through
// Host.Authenticate: a wrong token is refused, logged without the token and
// slowed; the right one gives a session that a rotation ends. Wrong
// credentials on the upgrade, and a plain request without any, are refused
// before the handler.
func TestInBandAuthentication(t *testing.T) {
	const tok = "in-band-token"
	var host server.Host
	var logs testenv.SyncBuffer
	p := newPauses()
	auth := server.NewAuth(tok, slogDiscard())
	type outcome struct {
		pending bool
		err     error
		cause   error
	}
	outcomes := make(chan outcome, 1)
	var up websocket.Upgrader
	rt := server.Route{Method: http.MethodGet, Path: "/test/inband", APIKey: true, InBandAuth: true,
		Handler: func(w http.ResponseWriter, r *http.Request) {
			pending := server.CallerOf(r.Context()).Pending
			ws, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer ws.Close()
			ctx := r.Context()
			if pending {
				_, msg, err := ws.ReadMessage()
				if err != nil {
					return
				}
				sctx, end, err := host.Authenticate(ctx, string(msg))
				if err != nil {
					outcomes <- outcome{pending: true, err: err}
					return
				}
				defer end(nil)
				ctx = sctx
			}
			_ = ws.WriteMessage(websocket.TextMessage, []byte("ok"))
			<-ctx.Done()
			outcomes <- outcome{pending: pending, cause: context.Cause(ctx)}
		}}
	s := serve(t, server.Config{Auth: auth, AuthFailurePause: p.pause, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Services: []server.NewService{hostService{testService{routes: []server.Route{rt}}, &host}.mount}})
	url := "ws://" + s.addr + "/test/inband"

	// Wrong token in band.
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("upgrade without credentials: %v", err)
	}
	const wrong = "wrong-in-band-token"
	_ = ws.WriteMessage(websocket.TextMessage, []byte(wrong))
	o := <-outcomes
	ws.Close()
	if !o.pending || api.KindOf(o.err) != api.KindUnauthenticated {
		t.Fatalf("wrong token in band: %+v, want a pending caller refused as unauthenticated", o)
	}
	if p.n.Load() != 1 {
		t.Errorf("the wrong in-band token was paused %d times, want 1", p.n.Load())
	}
	if out := logs.String(); strings.Contains(out, wrong) || !strings.Contains(out, "authentication failed") || !strings.Contains(out, "/test/inband") {
		t.Errorf("log of the in-band refusal (must name the route, never the token):\n%s", out)
	}

	// Right token in band: a session of the token's generation.
	ws, _, err = websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.WriteMessage(websocket.TextMessage, []byte(tok))
	if _, msg, err := ws.ReadMessage(); err != nil || string(msg) != "ok" {
		t.Fatalf("right token in band: %q %v", msg, err)
	}
	auth.Rotate("another-token")
	if o := <-outcomes; !errors.Is(o.cause, server.ErrTokenRotated) {
		t.Fatalf("the in-band session's end: %+v, want ErrTokenRotated", o)
	}

	// Refused before the handler: wrong credentials on the upgrade, and a
	// plain request without any.
	for name, h := range map[string]http.Header{
		"wrong key":    {server.HeaderAPIKey: {"nope"}},
		"wrong bearer": {"Authorization": {"Bearer nope"}},
	} {
		_, resp, err := websocket.DefaultDialer.Dial(url, h)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("upgrade with %s: %v %v, want 401", name, err, resp)
		}
	}
	if st := get(t, "http://"+s.addr+"/test/inband", http.Header{}); st != http.StatusUnauthorized {
		t.Errorf("plain GET without credentials: %d, want 401", st)
	}
	select {
	case o := <-outcomes:
		t.Fatalf("a refused request reached the handler: %+v", o)
	default:
	}
	if !bytes.Contains([]byte(logs.String()), []byte(`"status":401`)) {
		t.Errorf("no request line for the refused upgrades:\n%s", logs.String())
	}
}

// A WebSocket that has not authenticated in band yet counts as anonymous:
// it may be closed to make room, as an idle anonymous connection is, so
// unauthenticated upgrades cannot take every slot. Once it authenticates
// it is an authenticated stream.
func TestPendingUpgradeStaysAnonymous(t *testing.T) {
	const tok = "pending-token"
	var host server.Host
	var up websocket.Upgrader
	authed := make(chan error, 4)
	rt := server.Route{Method: http.MethodGet, Path: "/test/inband", InBandAuth: true,
		Handler: func(w http.ResponseWriter, r *http.Request) {
			ws, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer ws.Close()
			_, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			_, end, err := host.Authenticate(r.Context(), string(msg))
			authed <- err
			if err != nil {
				return
			}
			defer end(nil)
			_, _, _ = ws.ReadMessage() // until the client goes
		}}
	s := serve(t, server.Config{Auth: server.NewAuth(tok, slogDiscard()), AuthFailurePause: func(context.Context) {},
		Conns:    server.ConnLimits{MaxAnonymous: 1, MaxTotal: 8},
		Services: []server.NewService{hostService{testService{routes: []server.Route{rt}}, &host}.mount}})
	url := "ws://" + s.addr + "/test/inband"

	pending, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pending.Close()
	eventually(t, func() bool {
		_, anon, _, streams := s.ConnCounts()
		return anon == 1 && streams == 1
	})
	// A newcomer takes the only anonymous slot: the pending stream is the
	// one closed for it.
	c := dialRaw(t, s.addr)
	c.mustGet(t, "/health", "", http.StatusOK)
	_ = pending.SetReadDeadline(time.Now().Add(liveness))
	if _, _, err := pending.ReadMessage(); err == nil {
		t.Fatal("the pending stream was not closed to make room")
	}
	// The newcomer's slot is free only once the daemon has seen it close:
	// until then it may still be answering, not idle, so not evictable.
	_ = c.Close()
	eventually(t, func() bool {
		_, anon, _, _ := s.ConnCounts()
		return anon == 0
	})

	ok, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	_ = ok.WriteMessage(websocket.TextMessage, []byte(tok))
	if err := <-authed; err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		_, anon, authenticated, streams := s.ConnCounts()
		return anon == 0 && authenticated == 1 && streams == 1
	})
	// Now another anonymous newcomer evicts nothing that authenticated.
	c = dialRaw(t, s.addr)
	c.mustGet(t, "/health", "", http.StatusOK)
	// (The newcomer was admitted, and any eviction done, before its answer.)
	if _, _, _, streams := s.ConnCounts(); streams != 1 {
		t.Fatalf("the authenticated stream was closed: %d streams", streams)
	}
}
