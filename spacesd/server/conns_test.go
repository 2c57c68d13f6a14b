package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// liveness bounds a wait for something that must happen (an answer, a
// close): generous for a loaded machine, and no performance claim.
const liveness = time.Minute

// rawConn is one client socket speaking HTTP/1.1 by hand, so a test holds
// exactly the connections it means to.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{c, bufio.NewReader(c)}
}

// get sends GET path (with the token, if any) and reads the whole answer.
func (c *rawConn) get(path, token string) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	_ = c.SetDeadline(time.Now().Add(liveness))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if err := req.Write(c); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.r, req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// mustGet is get that fails the test unless the answer is status want.
func (c *rawConn) mustGet(t *testing.T, path, token string, want int) {
	t.Helper()
	status, err := c.get(path, token)
	if err != nil || status != want {
		t.Fatalf("GET %s: %d, %v; want %d", path, status, err, want)
	}
}

// closedByServer waits (within liveness) for the daemon to close c.
func (c *rawConn) closedByServer(t *testing.T) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(liveness))
	_, err := c.r.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// connsSettle waits until the daemon's connection accounting matches want.
func connsSettle(t *testing.T, s *served, wantTotal int) {
	t.Helper()
	eventually(t, func() bool { total, _, _, _ := s.ConnCounts(); return total == wantTotal })
}

// quietProbe is one socket of a flood: GET /health once, then quiet. It
// returns once the server counts it idle: the client reads the answer
// before the server's goroutine marks its connection idle, and a flood
// that ran ahead of that found nothing to evict (every anonymous slot a
// request in progress) and was refused, in a loaded run.
func quietProbe(t *testing.T, s *served) *rawConn {
	t.Helper()
	c := dialRaw(t, s.addr)
	c.mustGet(t, "/health", "", http.StatusOK)
	eventually(t, s.AllAnonymousIdle)
	return c
}

// The attack of the issue: many sockets that ask GET /health once and go
// quiet. They may not crowd out a client with the token: the oldest idle
// ones are closed to make room, a good client's calls go through, and the
// daemon returns to its baseline once the sockets are gone.
func TestIdleAnonymousConnsMakeRoomForClients(t *testing.T) {
	const tok, maxAnon = "conns-token", 16
	// The idle timeout is out of the way: room is made by eviction here.
	s := serve(t, server.Config{Auth: server.NewAuth(tok, slogDiscard()),
		Conns: server.ConnLimits{MaxAnonymous: maxAnon, AnonymousIdle: time.Hour}})
	baseline := goleak.IgnoreCurrent()

	flood := func(n int) []*rawConn {
		conns := make([]*rawConn, n)
		for i := range conns {
			conns[i] = quietProbe(t, s)
		}
		return conns
	}
	first := flood(4 * maxAnon)
	good := dialRaw(t, s.addr)
	good.mustGet(t, "/v1/capabilities", tok, http.StatusOK)
	second := flood(4 * maxAnon)

	// The good client's keep-alive connection outlived the flood...
	good.mustGet(t, "/v1/capabilities", tok, http.StatusOK)
	// ...and a new client gets through too.
	var dialed []net.Conn
	c, err := client.New(s.url(), tok, client.WithDialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			dialed = append(dialed, conn)
		}
		return conn, err
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), liveness)
	defer cancel()
	if _, err := c.Capabilities(ctx); err != nil {
		t.Fatalf("a client with the token during the flood: %v", err)
	}
	for _, conn := range dialed {
		_ = conn.Close()
	}

	// Every socket of the first wave is older than the maxAnon newest of
	// the second, so the daemon has closed each of them.
	for i, fc := range first {
		if !fc.closedByServer(t) {
			t.Fatalf("idle anonymous connection %d of %d still open after %d newer ones", i, len(first), len(second))
		}
	}
	if _, anon, _, _ := s.ConnCounts(); anon > maxAnon {
		t.Fatalf("%d anonymous connections held, the cap is %d", anon, maxAnon)
	}

	for _, fc := range append(second, good) {
		_ = fc.Close()
	}
	connsSettle(t, s, 0)
	goleak.VerifyNone(t, baseline)
}

// An anonymous connection idle between requests is closed after the short
// idle timeout; an authenticated one idles on.
func TestAnonymousConnsIdleOutFirst(t *testing.T) {
	const tok = "idle-token"
	s := serve(t, server.Config{Auth: server.NewAuth(tok, slogDiscard()),
		Conns: server.ConnLimits{AnonymousIdle: 50 * time.Millisecond, AuthenticatedIdle: time.Hour}})
	authed := dialRaw(t, s.addr)
	authed.mustGet(t, "/v1/capabilities", tok, http.StatusOK)
	prober := dialRaw(t, s.addr)
	prober.mustGet(t, "/health", "", http.StatusOK)
	if !prober.closedByServer(t) {
		t.Fatal("an idle anonymous connection was never closed")
	}
	// authed went idle before prober did: the anonymous timeout was not its.
	authed.mustGet(t, "/v1/capabilities", tok, http.StatusOK)
	// A wrong token leaves a connection anonymous.
	wrong := dialRaw(t, s.addr)
	wrong.mustGet(t, "/v1/capabilities", "not-the-token", http.StatusUnauthorized)
	if !wrong.closedByServer(t) {
		t.Fatal("a connection with a wrong token idled on as an authenticated one")
	}
	// GET /health with the token is a client's connection.
	healthy := dialRaw(t, s.addr)
	healthy.mustGet(t, "/health", tok, http.StatusOK)
	if _, anon, authn, _ := s.ConnCounts(); anon != 0 || authn != 2 {
		t.Fatalf("anonymous %d, authenticated %d; want 0 and 2", anon, authn)
	}
}

// The total is the last resort: when authenticated clients hold every
// slot, a newcomer is closed at once (none of theirs is evicted), and a slot
// freed is a slot taken.
func TestTotalCapClosesNewcomersWhenClientsHoldEverySlot(t *testing.T) {
	const tok, maxTotal = "total-token", 8
	s := serve(t, server.Config{Auth: server.NewAuth(tok, slogDiscard()),
		Conns: server.ConnLimits{MaxTotal: maxTotal, AnonymousIdle: time.Hour}})
	clients := make([]*rawConn, maxTotal)
	for i := range clients {
		clients[i] = dialRaw(t, s.addr)
		clients[i].mustGet(t, "/v1/capabilities", tok, http.StatusOK)
	}
	if !dialRaw(t, s.addr).closedByServer(t) {
		t.Fatal("a connection over the total was held")
	}
	for i, c := range clients {
		c.mustGet(t, "/v1/capabilities", tok, http.StatusOK) // none was evicted
		if i == 0 {
			_ = c.Close()
		}
	}
	connsSettle(t, s, maxTotal-1)
	dialRaw(t, s.addr).mustGet(t, "/v1/capabilities", tok, http.StatusOK)
}

// A WebSocket stream leaves http.Server's accounting when it is hijacked.
// It must not be evicted by a flood of anonymous sockets, and its slot must
// come back when it ends.
func TestStreamsAreNeitherEvictedNorLeaked(t *testing.T) {
	const tok, maxAnon = "stream-token", 4
	var up websocket.Upgrader
	echo := server.Route{Method: http.MethodGet, Path: "/test/echo", Handler: func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			typ, msg, err := ws.ReadMessage()
			if err != nil || ws.WriteMessage(typ, msg) != nil {
				return
			}
		}
	}}
	s := serve(t, server.Config{Auth: server.NewAuth(tok, slogDiscard()),
		Conns:    server.ConnLimits{MaxAnonymous: maxAnon, AnonymousIdle: time.Hour},
		Services: []server.NewService{testService{routes: []server.Route{echo}}.mount}})
	baseline := goleak.IgnoreCurrent()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+s.addr+"/test/echo", http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip := func(msg string) {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(liveness))
		if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatalf("stream write: %v", err)
		}
		if _, got, err := ws.ReadMessage(); err != nil || string(got) != msg {
			t.Fatalf("stream echo: %q, %v", got, err)
		}
	}
	roundTrip("before")
	if _, _, _, streams := s.ConnCounts(); streams != 1 {
		t.Fatalf("%d streams counted, want 1", streams)
	}
	var flood []*rawConn
	for range 4 * maxAnon {
		flood = append(flood, quietProbe(t, s))
	}
	roundTrip("after " + strings.Repeat("a flood ", 3))
	_ = ws.Close()
	for _, c := range flood {
		_ = c.Close()
	}
	connsSettle(t, s, 0)
	if _, _, _, streams := s.ConnCounts(); streams != 0 {
		t.Fatalf("%d streams counted after the stream ended", streams)
	}
	goleak.VerifyNone(t, baseline)
}

// Only the token makes a connection durable. Before, a connection whose
// one request a stream ticket authorized was held as an authenticated
// client's for good: a view link's holder (or anyone it leaked to) filled
// every slot with keep-alive sockets and the token's holder was refused.
// A ticket's connection stays anonymous: once its request has ended it is
// evicted to make room, and idles out as any anonymous one.
func TestTicketConnsStayAnonymous(t *testing.T) {
	const tok, maxTotal = "ticket-conns-token", 8
	auth := server.NewAuth(tok, slogDiscard())
	ticketed := server.Route{Method: http.MethodGet, Path: "/test/ticketed", Ticket: server.TicketScopeStream,
		Handler: func(w http.ResponseWriter, r *http.Request) {
			if server.CallerOf(r.Context()).Ticket == nil {
				http.Error(w, "no ticket", http.StatusTeapot)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}}
	s := serve(t, server.Config{Auth: auth,
		Conns:    server.ConnLimits{MaxTotal: maxTotal, AnonymousIdle: time.Hour},
		Services: []server.NewService{testService{routes: []server.Route{ticketed}}.mount}})
	tk, err := auth.MintTicket(server.Ticket{Scope: server.TicketScopeStream, Target: "screen", ViewOnly: true, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// As many keep-alive connections as the total, each with one request
	// of the ticket, answered.
	holders := make([]*rawConn, maxTotal)
	for i := range holders {
		holders[i] = dialRaw(t, s.addr)
		holders[i].mustGet(t, "/test/ticketed", tk, http.StatusNoContent)
	}
	if _, anon, authn, _ := s.ConnCounts(); authn != 0 || anon > maxTotal/2 {
		t.Fatalf("after %d ticket connections: %d anonymous, %d authenticated; want at most %d and 0", maxTotal, anon, authn, maxTotal/2)
	}
	// The token's holder gets through, and its connection lasts.
	good := dialRaw(t, s.addr)
	good.mustGet(t, "/v1/capabilities", tok, http.StatusOK)
	good.mustGet(t, "/v1/capabilities", tok, http.StatusOK)
	// The ticket connections opened first made room for the later ones.
	// Which of the first half went first depends on when each turned idle
	// (the server marks a connection idle after its answer, racing the
	// next dial): one of them must have.
	for _, h := range holders[:maxTotal/2] {
		if h.closedByServer(t) {
			return
		}
	}
	t.Fatal("none of the oldest idle ticket connections was closed past the anonymous cap")
}
