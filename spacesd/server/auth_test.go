package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// Every route but GET /health and the viewer page answers 401 and kind
// unauthenticated without the token, with a wrong one, and with a
// malformed header; those two answer 200 whatever the header.
func TestEveryRouteNeedsToken(t *testing.T) {
	public := map[string]bool{"GET /health": true, "GET /viewer/": true}
	d := spacesdtest.Start(t, spacesdtest.Options{})
	headers := map[string]string{
		"none":       "",
		"wrong":      "Bearer " + spacesdtest.Token(),
		"prefix":     "Bearer " + d.Token[:len(d.Token)-1],
		"not bearer": "Basic " + d.Token,
		"empty":      "Bearer ",
	}
	routes := append(d.Server.Routes(), "GET /no/such/route")
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt, " ")
		path = strings.ReplaceAll(path, "{id}", "x")
		for name, h := range headers {
			req, _ := http.NewRequest(method, d.URL+path, strings.NewReader("{}"))
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s (%s): %v", rt, name, err)
			}
			var env api.ErrorEnvelope
			_ = json.NewDecoder(resp.Body).Decode(&env)
			resp.Body.Close()
			if public[rt] {
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s (%s) = %d, want 200 without auth", rt, name, resp.StatusCode)
				}
				continue
			}
			if resp.StatusCode != http.StatusUnauthorized || env.Error == nil || env.Error.Kind != api.KindUnauthenticated {
				t.Errorf("%s with %s token = %d %+v, want 401 unauthenticated", rt, name, resp.StatusCode, env.Error)
			}
		}
	}
}

func TestHealthNamesDaemon(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	h, err := d.Client.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.Daemon != api.DaemonName || h.Version != "test" || h.Protocol != api.ProtocolVersion {
		t.Fatalf("health = %+v", h)
	}
}

func TestCapabilitiesListEveryFeature(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	caps, err := d.Client.Capabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if caps.Daemon != api.DaemonName || caps.OS == "" || caps.Arch == "" || caps.ProtocolVersion != api.ProtocolVersion {
		t.Fatalf("capabilities header = %+v", caps)
	}
	for _, f := range api.AllFeatures {
		st, ok := caps.Features[f]
		if !ok {
			t.Errorf("feature %s missing from capabilities", f)
			continue
		}
		if !st.Supported && st.Limitation == "" {
			t.Errorf("feature %s unsupported without a limitation", f)
		}
		if st.Supported && st.Limitation != "" {
			t.Errorf("feature %s supported but carries limitation %q", f, st.Limitation)
		}
	}
	if len(caps.Features) != len(api.AllFeatures) {
		t.Errorf("capabilities list %d features, the contract has %d", len(caps.Features), len(api.AllFeatures))
	}
}

// A call needing a feature the guest lacks answers capability_missing with
// the feature and its limitation, the same sentence capabilities report.
func TestUnsupportedFeatureAnswersCapabilityMissing(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{}) // no display
	caps, err := d.Client.Capabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := caps.Features[api.FeatureScreenshot]
	if st.Supported {
		t.Fatal("screenshot reported supported without a display")
	}
	_, err = d.Client.Do(context.Background(), http.MethodGet, "/v1/screenshot", nil, nil, "")
	e := api.AsError(err)
	if e.Limitation != st.Limitation {
		t.Errorf("limitation %q differs from capabilities' %q", e.Limitation, st.Limitation)
	}
	if e.Kind != api.KindCapabilityMissing || e.Feature != string(api.FeatureScreenshot) || e.Limitation == "" {
		t.Fatalf("screenshot without display: %+v, want capability_missing naming the feature and limitation", e)
	}
}

// Rotating the token file ends the old token's sessions and accepts only the new one.
func TestTokenFileRotation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	oldTok, newTok := spacesdtest.Token(), spacesdtest.Token()
	if err := os.WriteFile(file, []byte(oldTok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := server.NewFileAuth(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := spacesdtest.Start(t, spacesdtest.Options{Auth: auth})
	oldClient, _ := client.New(d.URL, oldTok)
	newClient, _ := client.New(d.URL, newTok)
	ctx := context.Background()
	if _, err := oldClient.Capabilities(ctx); err != nil {
		t.Fatalf("old token before rotation: %v", err)
	}
	gen, ok := auth.Check(oldTok)
	if !ok {
		t.Fatal("old token refused before rotation")
	}
	session, release := auth.Session(ctx, gen)
	defer release(nil)

	// Replace the file the way secret managers do: write aside, rename over.
	tmp := file + ".new"
	if err := os.WriteFile(tmp, []byte(newTok), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	select {
	case <-session.Done():
	case <-time.After(10 * server.TokenPollInterval):
		t.Fatal("session of the old token still open after rotation")
	}
	if _, err := newClient.Capabilities(ctx); err != nil {
		t.Fatalf("new token after rotation: %v", err)
	}
	_, err = oldClient.Capabilities(ctx)
	if api.KindOf(err) != api.KindUnauthenticated {
		t.Fatalf("old token after rotation: %v, want unauthenticated", err)
	}
}

// An empty or missing token file refuses to start rather than run open.
func TestTokenFileMustHoldAToken(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	for _, f := range []string{empty, filepath.Join(dir, "missing")} {
		if _, err := server.NewFileAuth(f, nil); err == nil {
			t.Errorf("NewFileAuth(%s) accepted no token", f)
		}
	}
}

// A rotation ends the old token's running requests with a cause that says
// so, for whoever reports the end (an exec, a stream) to name it, rather
// than "the caller went away".
func TestRotationIsTheCauseOfTheEnd(t *testing.T) {
	const oldTok = "old-token"
	auth := server.NewAuth(oldTok, slogDiscard())
	entered := make(chan struct{})
	causes := make(chan error, 1)
	wait := server.Route{Method: http.MethodGet, Path: "/test/wait", Handler: func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
		causes <- context.Cause(r.Context())
		w.WriteHeader(http.StatusNoContent)
	}}
	s := serve(t, server.Config{Auth: auth, Services: []server.NewService{testService{routes: []server.Route{wait}}.mount}})
	answered := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url()+"/test/wait", nil)
		req.Header.Set("Authorization", "Bearer "+oldTok)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	<-entered
	auth.Rotate("new-token")
	if cause := <-causes; !errors.Is(cause, server.ErrTokenRotated) {
		t.Fatalf("cause of a request ended by a rotation: %v, want ErrTokenRotated", cause)
	}
	if err := <-answered; err != nil {
		t.Fatalf("the request ended by the rotation got no answer: %v", err)
	}
}

// A stream ended by a shutdown says so in its context's cause. A request
// still running keeps the graceful shutdown going meanwhile, so the stream
// ends by the shutdown's start, not by the hard stop after it.
func TestShutdownIsTheCauseOfAStreamsEnd(t *testing.T) {
	const tok = "shutdown-cause-token"
	var up websocket.Upgrader
	causes := make(chan error, 1)
	hold := server.Route{Method: http.MethodGet, Path: "/test/hold", Handler: func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		<-r.Context().Done()
		causes <- context.Cause(r.Context())
	}}
	started, finish := make(chan struct{}), make(chan struct{})
	slow := server.Route{Method: http.MethodGet, Path: "/test/slow", Handler: func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-finish
		w.WriteHeader(http.StatusNoContent)
	}}
	s := serve(t, server.Config{Auth: server.NewAuth(tok, slogDiscard()),
		Services: []server.NewService{testService{routes: []server.Route{hold, slow}}.mount}})
	answered := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, s.url()+"/test/slow", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	<-started
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+s.addr+"/test/hold", http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	stopped := make(chan struct{})
	go func() { s.stop(); close(stopped) }()
	cause := <-causes
	close(finish)
	if err := <-answered; err != nil {
		t.Errorf("the request running through the graceful shutdown: %v", err)
	}
	<-stopped
	if !errors.Is(cause, server.ErrShutdown) {
		t.Fatalf("cause of a stream ended by the shutdown: %v, want ErrShutdown", cause)
	}
}

// The docs promise that a ticket of a token rotated away is refused with a
// message naming the rotation. Before, a rotation (which changes the
// signing key) made the old ticket look forged: "malformed or its
// signature does not match". A forgery still says that.
func TestOldTicketNamesTheRotation(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{}) // no display: a ticket that passes gets 501
	mint := func() string {
		t.Helper()
		tk, err := d.Auth.MintTicket(server.Ticket{Scope: server.TicketScopeStream, Target: "screen", Expires: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	answer := func(method, path, bearer string) (int, *api.Error) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, d.URL+path, strings.NewReader("v=0\r\n"))
		req.Header.Set("Content-Type", api.ContentTypeSDP)
		req.Header.Set("Authorization", "Bearer "+bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env api.ErrorEnvelope
		_ = json.NewDecoder(resp.Body).Decode(&env)
		return resp.StatusCode, env.Error
	}
	first := mint()
	if status, e := answer(http.MethodPost, api.PathStreamScreen, first); status == http.StatusUnauthorized {
		t.Fatalf("a fresh ticket: %d %+v", status, e)
	}
	d.Auth.Rotate(spacesdtest.Token())
	second := mint()
	d.Auth.Rotate(spacesdtest.Token())
	forged := first[:len(first)-3] + "AAA"
	for _, c := range []struct {
		what, method, path, ticket, says string
	}{
		{"a ticket of the token before", http.MethodPost, api.PathStreamScreen, second, "minted before the token was rotated"},
		{"a ticket two rotations old", http.MethodPost, api.PathStreamScreen, first, "minted before the token was rotated"},
		{"a DELETE with an old ticket", http.MethodDelete, "/v1/stream/sessions/x", first, "minted before the token was rotated"},
		{"a forged ticket", http.MethodPost, api.PathStreamScreen, forged, "malformed or its signature does not match"},
	} {
		status, e := answer(c.method, c.path, c.ticket)
		if status != http.StatusUnauthorized || e == nil || e.Kind != api.KindUnauthenticated || !strings.Contains(e.Message, c.says) {
			t.Errorf("%s: %d %+v; want 401 unauthenticated saying %q", c.what, status, e, c.says)
		}
	}
}

// The viewer page and /health are public: another method than theirs
// answers 405 with Allow, whoever asks, as for any static page. Before, it
// fell through to the daemon's unknown-route answer and said 401.
func TestPublicRoutesAnswerWrongMethodsWith405(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, api.PathViewer},
		{http.MethodPut, api.PathViewer + "index.html"},
		{http.MethodDelete, api.PathViewer + "a/whatever/main.js"},
		{http.MethodPost, "/health"},
	} {
		for _, bearer := range []string{"", d.Token} {
			req, _ := http.NewRequestWithContext(t.Context(), c.method, d.URL+c.path, strings.NewReader("{}"))
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var env api.ErrorEnvelope
			_ = json.NewDecoder(resp.Body).Decode(&env)
			resp.Body.Close()
			allow := resp.Header.Get("Allow")
			if resp.StatusCode != http.StatusMethodNotAllowed || allow != "GET, HEAD" || env.Error == nil || env.Error.Kind != api.KindInvalidArgument {
				t.Errorf("%s %s (token %v): %d, Allow %q, %+v; want 405, Allow \"GET, HEAD\", invalid_argument",
					c.method, c.path, bearer != "", resp.StatusCode, allow, env.Error)
			}
		}
	}
	// A route that is not public keeps its 401 without the token.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, d.URL+"/v1/capabilities", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("PUT /v1/capabilities without the token: %d, want 401", resp.StatusCode)
	}
}
