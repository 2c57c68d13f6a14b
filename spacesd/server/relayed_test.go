package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// relayedHarness is a server with a token, and routes that tell who
// called them, served on its listener and through Host.ServeConn.
type relayedHarness struct {
	*served
	host  server.Host
	auth  *server.Auth
	token string
	runs  atomic.Int64
	// hold: the route /t/hold waits until it closes or its request ends
	hold    chan struct{}
	holding chan struct{}
	ended   chan error
}

func newRelayedHarness(t *testing.T, token string) *relayedHarness {
	h := &relayedHarness{token: token, hold: make(chan struct{}), holding: make(chan struct{}, 4), ended: make(chan error, 4)}
	who := func(w http.ResponseWriter, r *http.Request) {
		c := server.CallerOf(r.Context())
		if c.Ticket != nil {
			io.WriteString(w, "ticket:"+c.Ticket.Target+" ")
		}
		if c.Principal == nil {
			io.WriteString(w, "token")
			return
		}
		io.WriteString(w, c.Principal.Person+"/"+string(c.Principal.Role)+"/"+c.Principal.Via)
	}
	svc := hostService{testService: testService{routes: []server.Route{
		{Method: http.MethodGet, Path: "/t/who", Handler: who},
		{Method: http.MethodGet, Path: "/t/view", Roles: []server.Role{server.RoleViewer}, Handler: who},
		{Method: http.MethodGet, Path: "/t/stream", Ticket: server.TicketScopeStream, Handler: who},
		{Method: http.MethodGet, Path: "/t/other", Ticket: "other", Handler: who},
		{Method: http.MethodGet, Path: "/t/public", Public: true, Handler: who},
		{Method: http.MethodPost, Path: "/t/run", Body: server.BodyJSON, Idempotent: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, strings.Repeat("x", int(h.runs.Add(1))))
		}},
		{Method: http.MethodGet, Path: "/t/hold", Handler: func(w http.ResponseWriter, r *http.Request) {
			h.holding <- struct{}{}
			select {
			case <-h.hold:
				io.WriteString(w, "released")
				h.ended <- nil
			case <-r.Context().Done():
				h.ended <- context.Cause(r.Context())
			}
		}},
	}}, host: &h.host}
	h.auth = server.NewAuth(token, slogDiscard())
	h.served = serve(t, server.Config{Auth: h.auth, Services: []server.NewService{svc.mount}})
	return h
}

// client is an HTTP client whose every connection is handed to the
// server through ServeConn as p's (a net.Pipe: what the relay's stream is
// to the daemon).
func (h *relayedHarness) client(t *testing.T, p server.Principal) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			if err := h.host.ServeConn(a, p); err != nil {
				t.Errorf("ServeConn: %v", err)
			}
		}()
		return b, nil
	}}}
}

func do(t *testing.T, c *http.Client, method, url string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var alice = server.Principal{Person: "u-alice", PersonName: "alice", Role: server.RoleOwner, Grant: "g1", Via: server.ViaRelay}

// A relayed connection's caller is its principal: no token needed, a
// wrong one ignored, and the connection never counted as anonymous.
func TestRelayedCallerIsThePrincipal(t *testing.T) {
	t.Parallel()
	h := newRelayedHarness(t, "relayed-token")
	c := h.client(t, alice)
	for _, hdr := range []map[string]string{nil, {"Authorization": "Bearer wrong"}} {
		if code, body := do(t, c, "GET", "http://relay/t/who", hdr, ""); code != 200 || body != "u-alice/owner/relay" {
			t.Fatalf("relayed GET (%v): %d %q", hdr, code, body)
		}
	}
	if code, _ := do(t, c, "GET", "http://relay/t/nothing", nil, ""); code != http.StatusNotFound {
		t.Fatalf("an unknown route through the relay: %d, want 404", code)
	}
	if total, anon, _, _ := h.ConnCounts(); total != 0 || anon != 0 {
		t.Fatalf("the listener's tracker counts a relayed connection: total %d anonymous %d", total, anon)
	}
	// The listener still wants the token.
	if code, _ := do(t, http.DefaultClient, "GET", h.url()+"/t/who", nil, ""); code != http.StatusUnauthorized {
		t.Fatalf("direct without a token: %d", code)
	}
	if code, body := do(t, http.DefaultClient, "GET", h.url()+"/t/who", map[string]string{"Authorization": "Bearer relayed-token"}, ""); code != 200 || body != "token" {
		t.Fatalf("direct with the token: %d %q", code, body)
	}
}

// Roles: the owner calls every route, another role only the routes that
// list it; a principal without a person is refused outright.
func TestRelayedRoles(t *testing.T) {
	t.Parallel()
	h := newRelayedHarness(t, "roles-token")
	viewer := server.Principal{Person: "u-bob", Role: server.RoleViewer, Via: server.ViaRelay}
	cases := []struct {
		p    server.Principal
		path string
		want int
	}{
		{alice, "/t/who", 200},
		{alice, "/t/view", 200},
		{viewer, "/t/view", 200},
		{viewer, "/t/who", http.StatusForbidden},
	}
	for _, tc := range cases {
		code, body := do(t, h.client(t, tc.p), "GET", "http://relay"+tc.path, nil, "")
		if code != tc.want {
			t.Errorf("%s as %s: %d %s, want %d", tc.path, tc.p.Role, code, body, tc.want)
		}
		if code == http.StatusForbidden && !strings.Contains(body, string(api.KindPermissionDenied)) {
			t.Errorf("refusal is not permission_denied: %s", body)
		}
	}
	a, b := net.Pipe()
	defer b.Close()
	if err := h.host.ServeConn(a, server.Principal{Role: server.RoleOwner}); err == nil {
		t.Fatal("ServeConn served a principal with no person")
	}
}

// Idempotency keys belong to the person: the same key from two people is
// two calls, from one person a replay; the token's holder is a third.
func TestRelayedIdempotencyKeysPerPerson(t *testing.T) {
	t.Parallel()
	h := newRelayedHarness(t, "idem-token")
	bob := server.Principal{Person: "u-bob", Role: server.RoleOwner, Via: server.ViaRelay}
	post := func(c *http.Client, url string, extra map[string]string) string {
		hdr := map[string]string{api.HeaderIdempotencyKey: "k1"}
		for k, v := range extra {
			hdr[k] = v
		}
		code, body := do(t, c, "POST", url, hdr, "{}")
		if code != 200 {
			t.Fatalf("POST: %d %s", code, body)
		}
		return body
	}
	a1 := post(h.client(t, alice), "http://relay/t/run", nil)
	a2 := post(h.client(t, alice), "http://relay/t/run", nil)
	b1 := post(h.client(t, bob), "http://relay/t/run", nil)
	t1 := post(http.DefaultClient, h.url()+"/t/run", map[string]string{"Authorization": "Bearer idem-token"})
	if a1 != a2 || len(a1) != 1 {
		t.Fatalf("alice's repeat ran again: %q then %q", a1, a2)
	}
	if len(b1) != 2 || len(t1) != 3 || h.runs.Load() != 3 {
		t.Fatalf("bob's and the token's calls shared alice's key: %q %q (runs %d)", b1, t1, h.runs.Load())
	}
}

// The browser checks: on a relayed connection the Host check does not
// apply and the origin is the relay's (X-Forwarded-*); on the listener
// those headers are not believed.
func TestRelayedBrowserChecks(t *testing.T) {
	t.Parallel()
	// No token: the listener answers loopback names only.
	h := newRelayedHarness(t, "")
	c := h.client(t, alice)
	fwd := map[string]string{"Host": "relay.example", "X-Forwarded-Host": "relay.example", "X-Forwarded-Proto": "https"}
	with := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{}
		for a, b := range m {
			out[a] = b
		}
		out[k] = v
		return out
	}
	cases := []struct {
		name string
		c    *http.Client
		url  string
		hdr  map[string]string
		want int
	}{
		{"relayed, foreign Host", c, "http://relay/t/who", map[string]string{"Host": "relay.example"}, 200},
		{"relayed, the relay's origin", c, "http://relay/t/who", with(fwd, "Origin", "https://relay.example"), 200},
		{"relayed, http origin of an https relay", c, "http://relay/t/who", with(fwd, "Origin", "http://relay.example"), 403},
		{"relayed, another page", c, "http://relay/t/who", with(fwd, "Origin", "https://evil.example"), 403},
		{"direct, forwarded headers not believed", http.DefaultClient, h.url() + "/t/who",
			map[string]string{"Origin": "https://relay.example", "X-Forwarded-Host": "relay.example", "X-Forwarded-Proto": "https"}, 403},
		{"direct, foreign Host", http.DefaultClient, h.url() + "/t/who", map[string]string{"Host": "relay.example"}, 403},
	}
	for _, tc := range cases {
		if code, body := do(t, tc.c, "GET", tc.url, tc.hdr, ""); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
}

// A rotation of the token ends the relayed connections opened under the
// old one, and the requests running on them.
func TestRelayedEndsWithTokenRotation(t *testing.T) {
	t.Parallel()
	h := newRelayedHarness(t, "rot-token")
	a, b := net.Pipe()
	defer b.Close()
	if err := h.host.ServeConn(a, alice); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.WriteString(b, "GET /t/hold HTTP/1.1\r\nHost: relay\r\n\r\n") }()
	<-h.holding
	h.auth.Rotate("new-token")
	select {
	case cause := <-h.ended:
		if !errors.Is(cause, server.ErrTokenRotated) {
			t.Fatalf("the relayed request ended with %v, want ErrTokenRotated", cause)
		}
	case <-time.After(time.Minute):
		t.Fatal("a rotation left the relayed request running")
	}
	// The connection itself is closed (a kept-alive one would idle for
	// minutes): reading it ends.
	_ = b.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.Copy(io.Discard, b); err != nil {
		t.Fatalf("the relayed connection stayed open after the rotation: %v", err)
	}
}

// A request that reaches a relayed connection of the old token after the
// rotation returned is refused, even before the rotation's close of the
// connection has run (it runs after Rotate returns).
func TestRelayedRequestAfterRotationRefused(t *testing.T) {
	t.Parallel()
	h := newRelayedHarness(t, "rot-token")
	a, b := net.Pipe()
	defer b.Close()
	if err := h.host.ServeConn(a, alice); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(b)
	ask := func() (int, error) {
		if _, err := io.WriteString(b, "GET /t/who HTTP/1.1\r\nHost: relay\r\n\r\n"); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := ask(); code != http.StatusOK {
		t.Fatalf("before the rotation: %d %v", code, err)
	}
	h.auth.Rotate("new-token")
	if code, err := ask(); err == nil && code != http.StatusUnauthorized {
		t.Fatalf("a request on the old token's connection after the rotation: %d, want 401 or a closed connection", code)
	}
}

// The graceful shutdown waits for a relayed request and lets it answer.
func TestRelayedDrainedByGracefulShutdown(t *testing.T) {
	t.Parallel()
	h := newRelayedHarness(t, "drain-token")
	c := h.client(t, alice)
	type answer struct {
		code int
		body string
	}
	answered := make(chan answer, 1)
	go func() {
		code, body := do(t, c, "GET", "http://relay/t/hold", nil, "")
		answered <- answer{code, body}
	}()
	<-h.holding
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	select {
	case <-stopped:
		t.Fatal("Serve returned while a relayed request ran")
	case <-time.After(200 * time.Millisecond):
	}
	close(h.hold)
	if a := <-answered; a.code != 200 || a.body != "released" {
		t.Fatalf("the drained request answered %d %q", a.code, a.body)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	// Once stopped, a handed-over connection is refused and closed.
	a, b := net.Pipe()
	defer b.Close()
	if err := h.host.ServeConn(a, alice); !errors.Is(err, server.ErrShutdown) {
		t.Fatalf("ServeConn after the stop: %v, want ErrShutdown", err)
	}
}
