package relayd_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/store"
)

// startRelayWith is a relay node as startRelay makes one, put together
// from its parts (the store, the Server, the admin socket), so that the
// test gives it a clock and a TURN minter Options does not take. Its
// Relay is no started one: Close it not; the test's cleanup stops it.
func startRelayWith(t *testing.T, limits relayd.Limits, clock relayd.Clock, turn relayd.TURNMinter) *testRelay {
	t.Helper()
	dataDir := t.TempDir()
	ca := tlstest.NewCA(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if limits.BadTokenPause == 0 {
		limits.BadTokenPause = 5 * time.Millisecond
	}
	st, err := store.Open(t.Context(), dataDir, nil, store.Options{Node: "n1"})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	urls := []string{"wss://" + ln.Addr().String()}
	srv, err := relayd.New(relayd.Config{Store: st, Node: "n1", URLs: urls, Limits: limits, Clock: clock, TURN: turn})
	if err != nil {
		ln.Close()
		st.Close()
		t.Fatal(err)
	}
	adminLn, err := relayd.ListenAdmin(dataDir)
	if err != nil {
		ln.Close()
		st.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.ServeAdmin(ctx, adminLn) })
	tlsCfg := relayd.TLSConfig(ca.Issue(t, "127.0.0.1"))
	wg.Go(func() { _ = srv.Serve(ctx, ln, tlsCfg) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		st.Close()
	})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &testRelay{Relay: &relayd.Relay{Server: srv, Store: st, URLs: urls}, t: t, dataDir: dataDir,
		addr: ln.Addr().String(), pool: pool, ca: ca, limits: limits}
}

// fakeClock is the relay's clock, moved by the test (the rate limit's
// refill). It starts at the real time: grants it signs must pass the
// Space's check of the real time.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testMinter mints TURN credentials as the relay's TURN server would be
// asked to, each one different (a counter in the password), and counts them.
type testMinter struct {
	host string // the credential's Host ("": the viewer's)
	mu   sync.Mutex
	n    int
	who  []string
}

func (m *testMinter) Credential(computer, who string) protocol.TurnCredential {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	m.who = append(m.who, computer+":"+who)
	return protocol.TurnCredential{
		Username: fmt.Sprintf("%d:%s:%s", time.Now().Add(time.Hour).Unix(), computer, who),
		Password: fmt.Sprintf("pw-%s-%d", who, m.n),
		Host:     m.host, UDPPort: 3478, TCPPort: 3478, TLSPort: 5349,
	}
}

func (m *testMinter) minted() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.who...)
}

// seenReq is a request that reached the stand-in Space of the link tests.
type seenReq struct {
	Method, Path, Query, Auth, Cookie string
	XFHost, XFProto                   string
	Grant                             protocol.Grant
}

// spaceICE is what the stand-in Space answers GET /v1/stream/ice with: a
// server of its own and a field the relay does not know, which it must
// keep.
const spaceICE = `{"ice_servers":[{"urls":["stun:stun.example.org:3478"]}],"x":1}`

// linkSpace is a stand-in Space's stream routes, as the real one answers
// them in shape: the viewer's page (a hostile one: a cookie and a service
// worker's scope over the whole origin, which the relay must never pass), the ICE servers (401 to the ticket
// "cuat1.bad", more than the relay reads with ?big=1), WHEP offers (201,
// Location of the session; the window "block" waits for release) and the
// session's DELETE. It records every request and its stream's grant.
type linkSpace struct {
	mu      sync.Mutex
	seen    []seenReq
	release chan struct{}
	arrived chan struct{} // a request for the window "block" arrived
}

func newLinkSpace() *linkSpace {
	return &linkSpace{release: make(chan struct{}), arrived: make(chan struct{}, 8)}
}

func (ls *linkSpace) requests() []seenReq {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return append([]seenReq(nil), ls.seen...)
}

func (ls *linkSpace) last(t *testing.T) seenReq {
	t.Helper()
	s := ls.requests()
	if len(s) == 0 {
		t.Fatal("nothing reached the Space")
	}
	return s[len(s)-1]
}

func (ls *linkSpace) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathViewer, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Set-Cookie", "evil=1; Path=/")
		w.Header().Set("Service-Worker-Allowed", "/")
		_, _ = io.WriteString(w, "<!doctype html><title>viewer</title>")
	})
	mux.HandleFunc("GET "+api.PathStreamICE, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") == "Bearer cuat1.bad":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(api.ErrorEnvelope{Error: api.Errorf(api.KindUnauthenticated, "the ticket is malformed")})
		case r.URL.Query().Get("big") != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ice_servers":[],"pad":"`+strings.Repeat("x", 100<<10)+`"}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, spaceICE)
		}
	})
	offer := func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "block" {
			ls.arrived <- struct{}{}
			select {
			case <-ls.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", api.ContentTypeSDP)
		w.Header().Set("Location", strings.Replace(api.PathStreamSession, "{id}", "s1", 1))
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "v=0\r\n")
	}
	mux.HandleFunc("POST "+api.PathStreamScreen, offer)
	mux.HandleFunc("POST "+api.PathStreamWindow, offer)
	mux.HandleFunc("DELETE "+api.PathStreamSession, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := r.Context().Value(grantCtxKey{}).(connInfo)
		ls.mu.Lock()
		ls.seen = append(ls.seen, seenReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), Cookie: r.Header.Get("Cookie"),
			XFHost: r.Header.Get("X-Forwarded-Host"), XFProto: r.Header.Get("X-Forwarded-Proto"), Grant: info.grant})
		ls.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
}

// call is a request to the relay: the Authorization given whole ("" for
// none), an optional Host header, no redirect followed.
type call struct {
	method, path, auth, host string
	body                     string
	hdr                      map[string]string
}

type answer struct {
	status int
	body   []byte
	header http.Header
}

func (r *testRelay) call(c call) answer {
	r.t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(r.t.Context(), c.method, r.url(c.path), body)
	if err != nil {
		r.t.Fatal(err)
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	if c.host != "" {
		req.Host = c.host
	}
	for k, v := range c.hdr {
		req.Header.Set(k, v)
	}
	cl := r.client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := cl.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, body: b, header: resp.Header}
}
