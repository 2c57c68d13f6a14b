package relayd_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/viewer"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
)

const (
	ticket    = "Bearer cuat1.payload.mac" // the relay checks no ticket: the Space does
	badTicket = "Bearer cuat1.bad"
)

// isLinkGrant reports whether g is a link holder's grant for computer.
func isLinkGrant(g protocol.Grant, computer string) bool {
	return g.Role == protocol.RoleLink && g.Person == protocol.LinkPerson && g.Computer == computer
}

// The viewer's files are the relay's own (media/viewer), whatever the
// computer (online, offline or none) and whatever Authorization comes: the
// same bytes with the page's CSP, no Set-Cookie or Service-Worker-Allowed
// (the stand-in Space would send both), and nothing reaches the Space, or
// counts as a link forward or a bad token. Nothing else is reached without
// a token.
func TestViewerPageIsTheRelays(t *testing.T) {
	r := startRelay(t, t.TempDir(), relayd.Limits{})
	alice := r.user("alice")
	ct := r.register(alice, "box")
	r.register(alice, "offbox")
	ls := newLinkSpace()
	r.attach(ct.Token, ls.handler())

	page := viewer.New()
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, api.PathViewer, nil))
	wantPage, csp := rec.Body.Bytes(), rec.Header().Get("Content-Security-Policy")
	if rec.Code != 200 || len(wantPage) == 0 || !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("the embedded page: %d, CSP %q", rec.Code, csp)
	}
	asset := "/viewer/a/" + page.Version() + "/"

	for _, c := range []call{
		{method: http.MethodGet, path: "/c/box/viewer/", hdr: map[string]string{"X-Forwarded-Host": "evil.example", "Cookie": "relay=secret"}},
		{method: http.MethodGet, path: "/c/box/viewer/index.html"},
		{method: http.MethodGet, path: "/c/offbox/viewer/"},
		{method: http.MethodGet, path: "/c/nobox1/viewer/"},
		{method: http.MethodGet, path: "/c/box/viewer/", auth: ticket},
		{method: http.MethodGet, path: "/c/box/viewer/", auth: badTicket},
		{method: http.MethodGet, path: "/c/box/viewer/", auth: "Bearer " + alice},
		{method: http.MethodGet, path: "/c/nobox1/viewer/", auth: "Bearer cuau_bogus"},
		{method: http.MethodGet, path: "/c/box/viewer/", auth: "Basic YTpi"},
	} {
		a := r.call(c)
		if a.status != 200 || !bytes.Equal(a.body, wantPage) || a.header.Get("Content-Security-Policy") != csp ||
			!strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
			t.Fatalf("%s %s (auth %.16q): %d, CSP %q, %.200s", c.method, c.path, c.auth, a.status, a.header.Get("Content-Security-Policy"), a.body)
		}
		if a.header.Get("Set-Cookie") != "" || a.header.Get("Service-Worker-Allowed") != "" {
			t.Fatalf("%s %s: Set-Cookie %q, Service-Worker-Allowed %q", c.method, c.path, a.header.Get("Set-Cookie"), a.header.Get("Service-Worker-Allowed"))
		}
	}
	// The page's files, under the same prefix (its links are relative).
	a := r.call(call{method: http.MethodGet, path: "/c/box" + asset + "main.js"})
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/javascript") || len(a.body) == 0 ||
		a.header.Get("Content-Security-Policy") != csp || !bytes.Contains(wantPage, []byte(strings.TrimPrefix(asset, api.PathViewer)+"main.js")) {
		t.Fatalf("main.js: %d %q", a.status, a.header.Get("Content-Type"))
	}
	if a := r.call(call{method: http.MethodHead, path: "/c/offbox" + asset + "viewer.css"}); a.status != 200 || len(a.body) != 0 ||
		!strings.HasPrefix(a.header.Get("Content-Type"), "text/css") {
		t.Fatalf("HEAD viewer.css: %d %q", a.status, a.header.Get("Content-Type"))
	}
	if a := r.call(call{method: http.MethodGet, path: "/c/box/viewer/a/0123456789abcdef/main.js"}); a.status != 404 || a.header.Get("Content-Security-Policy") != csp {
		t.Fatalf("a file of another version: %d", a.status)
	}
	if got := ls.requests(); len(got) != 0 {
		t.Fatalf("the viewer's files reached the Space: %+v", got)
	}
	if f, b := r.Server.Metrics().LinkForwards.Load(), r.Server.Metrics().BadTokens.Load(); f != 0 || b != 0 {
		t.Fatalf("link forwards %d, bad tokens %d", f, b)
	}

	// No token: any other route, a viewer path that is not clean, a POST
	// to the viewer: 401, and the Space sees nothing. With a ticket, the
	// same 401 (no link route).
	for _, c := range []call{
		{method: http.MethodGet, path: "/c/box/v1/capabilities"},
		{method: http.MethodGet, path: "/c/box/v1/stream/ice"},
		{method: http.MethodPost, path: "/c/box/v1/stream/screen", body: "v=0"},
		{method: http.MethodPost, path: "/c/box/viewer/"},
		{method: http.MethodPost, path: "/c/box/viewer/", auth: ticket},
		{method: http.MethodGet, path: "/c/box/viewer/..%2Fv1%2Fcapabilities"},
		{method: http.MethodGet, path: "/c/box/viewer/..%2Fv1%2Fstream%2Fice", auth: ticket},
	} {
		a := r.call(c)
		if e := errorOf(t, a.body); a.status != 401 || e.Kind != api.KindUnauthenticated {
			t.Errorf("%s %s (auth %q): %d %s", c.method, c.path, c.auth, a.status, a.body)
		}
	}
	if got := ls.requests(); len(got) != 0 {
		t.Fatalf("refused requests reached the Space: %+v", got)
	}
}

// With a media ticket, the stream routes reach the Space with the ticket
// intact and a link grant; on any other route the ticket is refused 401
// before anything is looked up, and the Space sees nothing. An offline
// computer and none answer alike.
func TestLinkTicketRoutes(t *testing.T) {
	r := startRelay(t, t.TempDir(), relayd.Limits{})
	alice := r.user("alice")
	ct := r.register(alice, "box")
	r.register(alice, "offbox")
	ls := newLinkSpace()
	r.attach(ct.Token, ls.handler())

	for _, tc := range []struct {
		c      call
		status int
	}{
		{call{method: http.MethodGet, path: "/c/box/v1/stream/ice"}, 200},
		{call{method: http.MethodPost, path: "/c/box/v1/stream/screen?max_fps=15&ice=relay", body: "v=0"}, 201},
		{call{method: http.MethodPost, path: "/c/box/v1/stream/windows/7", body: "v=0"}, 201},
		{call{method: http.MethodDelete, path: "/c/box/v1/stream/sessions/s1"}, 200},
	} {
		tc.c.auth = ticket
		a := r.call(tc.c)
		if a.status != tc.status {
			t.Fatalf("%s %s: %d %s", tc.c.method, tc.c.path, a.status, a.body)
		}
		got := ls.last(t)
		path, query, _ := strings.Cut(strings.TrimPrefix(tc.c.path, "/c/box"), "?")
		if got.Method != tc.c.method || got.Path != path || got.Query != query || got.Auth != ticket || !isLinkGrant(got.Grant, "box") {
			t.Fatalf("%s %s: the Space saw %+v", tc.c.method, tc.c.path, got)
		}
	}

	// The Space's refusal of a ticket passes as it is.
	a := r.call(call{method: http.MethodGet, path: "/c/box/v1/stream/ice", auth: badTicket})
	if e := errorOf(t, a.body); a.status != 401 || e.Message != "the ticket is malformed" {
		t.Fatalf("a ticket the Space refuses: %d %s", a.status, a.body)
	}

	before := len(ls.requests())
	for _, c := range []call{
		{method: http.MethodGet, path: "/c/box/v1/capabilities"},
		{method: http.MethodPost, path: "/c/box/v1/exec", body: `{"cmd":["true"]}`},
		{method: http.MethodGet, path: "/c/box/v1/stream/screen"},
		{method: http.MethodPost, path: "/c/box/v1/stream/tickets", body: "{}"},
		{method: http.MethodPost, path: "/c/box/v1/stream/windows/a%2Fb", body: "v=0"},
		{method: http.MethodPost, path: "/c/box/v1/stream/windows/", body: "v=0"},
		{method: http.MethodDelete, path: "/c/box/v1/stream/sessions/s1/x"},
		{method: http.MethodPost, path: "/c/box/v1/stream/%2E/screen", body: "v=0"},
		{method: http.MethodGet, path: "/c/box/v1/stream/ice/"},
		{method: http.MethodGet, path: "/c/nobox/v1/capabilities"},
		{method: http.MethodPut, path: "/c/box/v1/relay", body: "{}"},
	} {
		c.auth = ticket
		a := r.call(c)
		if a.status != 401 {
			t.Errorf("ticket on %s %s: %d %s", c.method, c.path, a.status, a.body)
			continue
		}
		if e := errorOf(t, a.body); a.status != 401 || e.Kind != api.KindUnauthenticated {
			t.Errorf("ticket on %s %s: %d %s", c.method, c.path, a.status, a.body)
		}
	}
	if n := len(ls.requests()); n != before {
		t.Fatalf("refused requests reached the Space: %+v", ls.requests()[before:])
	}
	if n := r.Server.Metrics().BadTokens.Load(); n != 0 {
		t.Fatalf("a ticket counted as a bad relay token: %d", n)
	}

	// An offline computer and one that does not exist look alike.
	off := r.call(call{method: http.MethodGet, path: "/c/offbox/v1/stream/ice", auth: ticket})
	none := r.call(call{method: http.MethodGet, path: "/c/nobox1/v1/stream/ice", auth: ticket})
	eOff, eNone := errorOf(t, off.body), errorOf(t, none.body)
	if off.status != http.StatusBadGateway || eOff.Kind != api.KindRelay || !eOff.Retryable ||
		none.status != off.status || strings.ReplaceAll(eNone.Message, "nobox1", "offbox") != eOff.Message || eNone.Hint != eOff.Hint {
		t.Fatalf("offline: %d %s; none: %d %s", off.status, off.body, none.status, none.body)
	}

	// The owner's token still reaches every route, as the owner.
	a = r.call(call{method: http.MethodGet, path: "/c/box/v1/capabilities", auth: "Bearer " + alice})
	if got := ls.last(t); a.status != 200 || got.Grant.Role != protocol.RoleOwner || got.Auth != "" {
		t.Fatalf("owner: %d, the Space saw %+v", a.status, got)
	}
}

// Link forwards take from one token bucket per computer: past the burst,
// 429 limit_exceeded (rate_limited) with Retry-After, and nothing reaches
// the Space; the bucket refills at the rate, on the relay's clock. The
// owner, another computer's links and the viewer page (the relay's own)
// are not held back.
func TestLinkRateLimit(t *testing.T) {
	clock := newFakeClock()
	r := startRelayWith(t, relayd.Limits{LinkRate: 2, LinkBurst: 3}, clock, nil)
	alice := r.user("alice")
	ls, other := newLinkSpace(), newLinkSpace()
	r.attach(r.register(alice, "box").Token, ls.handler())
	r.attach(r.register(alice, "other").Token, other.handler())

	ice := call{method: http.MethodGet, path: "/c/box/v1/stream/ice", auth: ticket}
	for i := range 3 {
		if a := r.call(ice); a.status != 200 {
			t.Fatalf("request %d within the burst: %d %s", i, a.status, a.body)
		}
	}
	for _, c := range []call{ice, {method: http.MethodPost, path: "/c/box/v1/stream/screen", auth: ticket, body: "v=0"}} {
		a := r.call(c)
		if e := errorOf(t, a.body); a.status != http.StatusTooManyRequests || e.Kind != api.KindLimitExceeded ||
			e.Reason != relayapi.ReasonRateLimited || a.header.Get("Retry-After") != "1" {
			t.Fatalf("past the burst: %d %s (Retry-After %q)", a.status, a.body, a.header.Get("Retry-After"))
		}
	}
	if n := len(ls.requests()); n != 3 {
		t.Fatalf("%d requests reached the Space, want 3", n)
	}
	if n, f := r.Server.Metrics().LinkRateLimited.Load(), r.Server.Metrics().LinkForwards.Load(); n != 2 || f != 3 {
		t.Fatalf("rate-limited: %d, forwarded: %d", n, f)
	}
	if a := r.call(call{method: http.MethodGet, path: "/c/box/v1/capabilities", auth: "Bearer " + alice}); a.status != 200 {
		t.Fatalf("the owner behind an empty link bucket: %d %s", a.status, a.body)
	}
	if a := r.call(call{method: http.MethodGet, path: "/c/other/v1/stream/ice", auth: ticket}); a.status != 200 {
		t.Fatalf("another computer's link: %d %s", a.status, a.body)
	}
	if a := r.call(call{method: http.MethodGet, path: "/c/box/viewer/"}); a.status != 200 || r.Server.Metrics().LinkRateLimited.Load() != 2 {
		t.Fatalf("the viewer page behind an empty link bucket: %d %.200s", a.status, a.body)
	}

	clock.Advance(500 * time.Millisecond) // one request at 2/s
	if a := r.call(ice); a.status != 200 {
		t.Fatalf("after the refill: %d %s", a.status, a.body)
	}
	if a := r.call(ice); a.status != http.StatusTooManyRequests {
		t.Fatalf("one refill took twice: %d", a.status)
	}
	clock.Advance(time.Hour) // refills to the burst, no further
	for i := range 3 {
		if a := r.call(ice); a.status != 200 {
			t.Fatalf("request %d after a long pause: %d", i, a.status)
		}
	}
	if a := r.call(ice); a.status != http.StatusTooManyRequests {
		t.Fatalf("a long pause filled past the burst: %d", a.status)
	}
}

// Link forwards hold at most MaxLinkStreams streams of a session: past
// it, 429 too_many_streams, while the owner still gets through; a freed
// stream serves again.
func TestLinkStreamCap(t *testing.T) {
	r := startRelay(t, t.TempDir(), relayd.Limits{MaxLinkStreams: 1})
	alice := r.user("alice")
	ls := newLinkSpace()
	r.attach(r.register(alice, "box").Token, ls.handler())

	// The held offer's goroutine fails no test itself (no Fatal off the
	// test's goroutine), and a failing test lets it go.
	var wg sync.WaitGroup
	var heldStatus int
	var heldErr error
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(ls.release) }) }
	t.Cleanup(func() { release(); wg.Wait() })
	wg.Go(func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, r.url("/c/box/v1/stream/windows/block"), strings.NewReader("v=0"))
		req.Header.Set("Authorization", ticket)
		resp, err := r.client().Do(req)
		if err != nil {
			heldErr = err
			return
		}
		resp.Body.Close()
		heldStatus = resp.StatusCode
	})
	select {
	case <-ls.arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("the held offer never reached the Space")
	}
	a := r.call(call{method: http.MethodDelete, path: "/c/box/v1/stream/sessions/s1", auth: ticket})
	if e := errorOf(t, a.body); a.status != http.StatusTooManyRequests || e.Reason != "too_many_streams" {
		t.Fatalf("past the link streams: %d %s", a.status, a.body)
	}
	if a := r.call(call{method: http.MethodGet, path: "/c/box/v1/capabilities", auth: "Bearer " + alice}); a.status != 200 {
		t.Fatalf("the owner past the link streams: %d %s", a.status, a.body)
	}
	release()
	wg.Wait()
	if heldErr != nil || heldStatus != http.StatusCreated {
		t.Fatalf("the held offer: %d %v", heldStatus, heldErr)
	}
	eventually(t, "a link stream frees", func() bool {
		return r.call(call{method: http.MethodDelete, path: "/c/box/v1/stream/sessions/s1", auth: ticket}).status == 200
	})
}

// Every WHEP offer, a link holder's or the owner's, goes on a stream of its
// own whose grant carries the Space's TURN credential for that view; the
// answer's Location is rewritten under /c/<computer>. Other requests keep
// their pooled stream, with no TURN credential.
func TestOfferStreams(t *testing.T) {
	turn := &testMinter{}
	r := startRelayWith(t, relayd.Limits{}, nil, turn)
	alice := r.user("alice")
	ls := newLinkSpace()
	r.attach(r.register(alice, "box").Token, ls.handler())

	offers := []call{
		{method: http.MethodPost, path: "/c/box/v1/stream/screen", auth: ticket, body: "v=0"},
		{method: http.MethodPost, path: "/c/box/v1/stream/windows/7", auth: ticket, body: "v=0"},
		{method: http.MethodPost, path: "/c/box/v1/stream/screen", auth: "Bearer " + alice, body: "v=0"},
	}
	grants := map[string]bool{}
	for _, c := range offers {
		a := r.call(c)
		if a.status != http.StatusCreated || a.header.Get("Location") != "/c/box/v1/stream/sessions/s1" || string(a.body) != "v=0\r\n" {
			t.Fatalf("%s %s: %d %s (Location %q)", c.method, c.path, a.status, a.body, a.header.Get("Location"))
		}
		g := ls.last(t).Grant
		if g.Turn == nil || !strings.HasSuffix(g.Turn.Username, ":box:space") || g.Turn.UDPPort != 3478 || g.Turn.TLSPort != 5349 {
			t.Fatalf("%s: the offer's grant: %+v", c.auth[:12], g)
		}
		wantRole := protocol.RoleLink
		if c.auth != ticket {
			wantRole = protocol.RoleOwner
		}
		if g.Role != wantRole {
			t.Fatalf("offer with %.12s: role %s", c.auth, g.Role)
		}
		if grants[g.ID] {
			t.Fatalf("two offers on one stream (grant %s)", g.ID)
		}
		grants[g.ID] = true
	}
	if got := turn.minted(); len(got) != 3 || got[0] != "box:space" || got[2] != "box:space" {
		t.Fatalf("minted: %v", got)
	}
	// The pool's streams, for contrast: two GETs, one stream, no TURN.
	var ids []string
	for range 2 {
		if a := r.call(call{method: http.MethodGet, path: "/c/box/v1/stream/ice", auth: ticket}); a.status != 200 {
			t.Fatalf("ice: %d", a.status)
		}
		g := ls.last(t).Grant
		if g.Turn != nil {
			t.Fatalf("an ICE query's grant carries TURN: %+v", g.Turn)
		}
		ids = append(ids, g.ID)
	}
	if ids[0] != ids[1] {
		t.Fatalf("pooled requests on two streams: %v", ids)
	}
}

// Without a TURN server, an offer's grant carries none, and the ICE
// servers pass as the Space answered them.
func TestOfferWithoutTURN(t *testing.T) {
	r := startRelay(t, t.TempDir(), relayd.Limits{})
	alice := r.user("alice")
	ls := newLinkSpace()
	r.attach(r.register(alice, "box").Token, ls.handler())
	if a := r.call(call{method: http.MethodPost, path: "/c/box/v1/stream/screen", auth: ticket, body: "v=0"}); a.status != 201 || ls.last(t).Grant.Turn != nil {
		t.Fatalf("offer: %d, grant %+v", a.status, ls.last(t).Grant)
	}
	if a := r.call(call{method: http.MethodGet, path: "/c/box/v1/stream/ice", auth: ticket}); a.status != 200 || strings.TrimSpace(string(a.body)) != spaceICE {
		t.Fatalf("ice: %d %s", a.status, a.body)
	}
}

// GET /c/<computer>/v1/stream/ice: the relay adds its TURN server with a
// viewer's credential to the Space's 200, on the host the viewer reached
// it by (or the credential's own), keeps the rest, and sets the length;
// a refusal passes as it is; an answer larger than the relay reads is a
// relay error.
func TestICEServersAddTURN(t *testing.T) {
	turn := &testMinter{}
	r := startRelayWith(t, relayd.Limits{}, nil, turn)
	alice := r.user("alice")
	ls := newLinkSpace()
	r.attach(r.register(alice, "box").Token, ls.handler())

	for _, tc := range []struct {
		name, auth, host, credHost, wantHost string
	}{
		{"ticket", ticket, "", "", "127.0.0.1"},
		{"owner", "Bearer " + alice, "", "", "127.0.0.1"},
		{"named host", ticket, "relay.example.com:8443", "", "relay.example.com"},
		{"ipv6 host", ticket, "[::1]:8443", "", "[::1]"},
		{"credential's host", ticket, "relay.example.com", "turn.example.net", "turn.example.net"},
	} {
		turn.mu.Lock()
		turn.host = tc.credHost
		turn.mu.Unlock()
		a := r.call(call{method: http.MethodGet, path: "/c/box/v1/stream/ice", auth: tc.auth, host: tc.host})
		if a.status != 200 || a.header.Get("Content-Length") != strconv.Itoa(len(a.body)) || a.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %d %s (Content-Length %q)", tc.name, a.status, a.body, a.header.Get("Content-Length"))
		}
		var got struct {
			api.StreamICE
			X int `json:"x"`
		}
		if err := json.Unmarshal(a.body, &got); err != nil || got.X != 1 || len(got.ICEServers) != 2 {
			t.Fatalf("%s: %v %s", tc.name, err, a.body)
		}
		if s := got.ICEServers[0]; len(s.URLs) != 1 || s.URLs[0] != "stun:stun.example.org:3478" {
			t.Fatalf("%s: the Space's server: %+v", tc.name, s)
		}
		s := got.ICEServers[1]
		want := []string{"turn:" + tc.wantHost + ":3478?transport=udp", "turn:" + tc.wantHost + ":3478?transport=tcp", "turns:" + tc.wantHost + ":5349?transport=tcp"}
		if strings.Join(s.URLs, " ") != strings.Join(want, " ") || !strings.HasSuffix(s.Username, ":box:viewer") || !strings.HasPrefix(s.Credential, "pw-viewer-") {
			t.Fatalf("%s: the relay's server: %+v, want %v", tc.name, s, want)
		}
	}
	if got := turn.minted(); len(got) != 5 || got[0] != "box:viewer" {
		t.Fatalf("minted: %v", got)
	}

	a := r.call(call{method: http.MethodGet, path: "/c/box/v1/stream/ice", auth: badTicket})
	if e := errorOf(t, a.body); a.status != 401 || e.Message != "the ticket is malformed" {
		t.Fatalf("refused ticket: %d %s", a.status, a.body)
	}
	if n := len(turn.minted()); n != 5 {
		t.Fatalf("a credential minted for a refused view: %d", n)
	}
	a = r.call(call{method: http.MethodGet, path: "/c/box/v1/stream/ice?big=1", auth: ticket})
	if e := errorOf(t, a.body); a.status != http.StatusBadGateway || e.Kind != api.KindRelay {
		t.Fatalf("an oversized answer: %d %.300s", a.status, a.body)
	}
}
