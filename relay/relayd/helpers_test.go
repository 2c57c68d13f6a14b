package relayd_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/yamux"
	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/tunnel"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// http.Transport's idle connections of the test clients close on
		// their own schedule.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

// testRelay is a relay node on loopback with real TLS (a test CA) and a
// real embedded JetStream.
type testRelay struct {
	*relayd.Relay
	t       testing.TB
	dataDir string
	addr    string
	pool    *x509.CertPool
	ca      *tlstest.CA
	limits  relayd.Limits
}

func startRelay(t *testing.T, dataDir string, limits relayd.Limits) *testRelay {
	t.Helper()
	ca := tlstest.NewCA(t)
	return startRelayCA(t, dataDir, limits, ca)
}

func startRelayCA(t *testing.T, dataDir string, limits relayd.Limits, ca *tlstest.CA) *testRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if limits.BadTokenPause == 0 {
		limits.BadTokenPause = 5 * time.Millisecond
	}
	r, err := relayd.Start(t.Context(), ln, relayd.Options{
		DataDir: dataDir, Node: "n1", TLS: relayd.TLSConfig(ca.Issue(t, "127.0.0.1")), Limits: limits,
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	tr := &testRelay{Relay: r, t: t, dataDir: dataDir, addr: ln.Addr().String(), pool: pool, ca: ca, limits: limits}
	t.Cleanup(func() { r.Close() })
	return tr
}

func (r *testRelay) tlsConfig() *tls.Config { return &tls.Config{RootCAs: r.pool} }

func (r *testRelay) url(path string) string { return "https://" + r.addr + path }

func (r *testRelay) client() *http.Client {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: r.tlsConfig()}, Timeout: 30 * time.Second}
	r.t.Cleanup(c.CloseIdleConnections)
	return c
}

// user adds a user through the admin socket and answers its API token.
func (r *testRelay) user(name string) string {
	r.t.Helper()
	c := relayd.NewAdminClient(r.dataDir)
	if _, err := c.CreateUser(r.t.Context(), name, ""); err != nil {
		r.t.Fatal(err)
	}
	tok, err := c.CreateToken(r.t.Context(), name)
	if err != nil {
		r.t.Fatal(err)
	}
	return tok
}

// do calls the relay with a user token; it answers the status and body.
func (r *testRelay) do(method, path, token string, body any, hdr ...string) (int, []byte, http.Header) {
	r.t.Helper()
	var rd io.Reader
	if b, ok := body.([]byte); ok {
		rd = bytes.NewReader(b)
	} else if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(r.t.Context(), method, r.url(path), rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := r.client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// register makes a computer of the user's and answers its token.
func (r *testRelay) register(userToken, name string) relayapi.ComputerToken {
	r.t.Helper()
	st, b, _ := r.do(http.MethodPost, relayapi.PathComputers, userToken, relayapi.CreateComputer{Name: name})
	if st != http.StatusCreated && st != http.StatusOK {
		r.t.Fatalf("register %s: %d %s", name, st, b)
	}
	var ct relayapi.ComputerToken
	if err := json.Unmarshal(b, &ct); err != nil {
		r.t.Fatal(err)
	}
	return ct
}

func errorOf(t *testing.T, b []byte) *api.Error {
	t.Helper()
	var env api.ErrorEnvelope
	if err := json.Unmarshal(b, &env); err != nil || env.Error == nil {
		t.Fatalf("not an error envelope: %s", b)
	}
	return env.Error
}

// --- the stand-in Space ---

// standInSpace is a minimal Space for these tests only (the real one is
// cua-spacesd's relay attach, which this program may not import; the
// lead's e2e suite runs the real programs): it dials /v1/attach, says
// Hello, answers pings, dials data connections, and serves an http.Handler
// of the test on every stream whose header and grant check out.
type standInSpace struct {
	t       testing.TB
	relay   *testRelay
	ws      *websocket.Conn
	mux     *yamux.Session
	ctrl    *protocol.Writer
	welcome protocol.Welcome
	srv     *http.Server
	ln      *chanListener

	// silent: answer no ping (a Space whose VM froze).
	silent bool

	mu      sync.Mutex
	goAways []protocol.GoAway
	closed  chan protocol.CloseCode // the relay's Close frame, or the WebSocket's close code
	kicks   chan kickSeen           // the relay's Kicks, when they arrived
	done    chan struct{}
	wg      sync.WaitGroup
}

type grantCtxKey struct{}

// kickSeen is a Kick the stand-in read, and when.
type kickSeen struct {
	protocol.Kick
	at time.Time
}

// connInfo is what the test handler learns of its connection.
type connInfo struct {
	grant protocol.Grant
	data  bool // a data connection, not a yamux stream
}

type grantConn struct {
	net.Conn
	info connInfo
}

// dialAttach dials /v1/attach with token: the WebSocket, or the refusal.
func (r *testRelay) dialAttach(token string) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{TLSClientConfig: r.tlsConfig(), HandshakeTimeout: 10 * time.Second}
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return d.DialContext(r.t.Context(), "wss://"+r.addr+relayapi.PathAttach, h)
}

// attach starts a stand-in Space with the computer token; it fails the
// test unless the relay welcomes it.
func (r *testRelay) attach(token string, h http.Handler) *standInSpace {
	r.t.Helper()
	return r.attachWith(token, h, false)
}

func (r *testRelay) attachWith(token string, h http.Handler, silent bool) *standInSpace {
	r.t.Helper()
	ws, resp, err := r.dialAttach(token)
	if err != nil {
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			r.t.Fatalf("attach: %v: %d %s", err, resp.StatusCode, b)
		}
		r.t.Fatalf("attach: %v", err)
	}
	closed := make(chan protocol.CloseCode, 4)
	// The WebSocket's close frame carries the code too (when yamux's end
	// outruns the control stream's Close frame).
	ws.SetCloseHandler(func(code int, _ string) error {
		select {
		case closed <- protocol.CloseCode(code):
		default:
		}
		return nil
	})
	mux, err := yamux.Client(tunnel.NewWSConn(ws), tunnel.Config(nil))
	if err != nil {
		r.t.Fatal(err)
	}
	st, err := mux.OpenStream()
	if err != nil {
		r.t.Fatal(err)
	}
	sp := &standInSpace{t: r.t, relay: r, ws: ws, mux: mux, ctrl: protocol.NewWriter(st, 5*time.Second),
		silent: silent, closed: closed, kicks: make(chan kickSeen, 16), done: make(chan struct{}), ln: newChanListener()}
	if err := sp.ctrl.WriteMessage(protocol.NewHello("", "test-space")); err != nil {
		r.t.Fatal(err)
	}
	rd := protocol.NewReader(st)
	m, err := rd.ReadMessage()
	if err != nil {
		r.t.Fatal(err)
	}
	w, ok := m.(protocol.Welcome)
	if !ok {
		r.t.Fatalf("first frame: %T %+v, want welcome", m, m)
	}
	sp.welcome = w
	sp.srv = &http.Server{Handler: h, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
		if gc, ok := c.(*grantConn); ok {
			return context.WithValue(ctx, grantCtxKey{}, gc.info)
		}
		return ctx
	}}
	sp.wg.Go(func() { _ = sp.srv.Serve(sp.ln) })
	sp.wg.Go(func() { sp.control(rd) })
	sp.wg.Go(sp.accept)
	r.t.Cleanup(sp.close)
	return sp
}

func (sp *standInSpace) control(rd *protocol.Reader) {
	defer close(sp.done)
	for {
		m, err := rd.ReadMessage()
		if err != nil {
			return
		}
		switch m := m.(type) {
		case protocol.Ping:
			if !sp.silent {
				_ = sp.ctrl.WriteMessage(protocol.Pong(m))
			}
		case protocol.GoAway:
			sp.mu.Lock()
			sp.goAways = append(sp.goAways, m)
			sp.mu.Unlock()
		case protocol.OpenData:
			sp.wg.Go(func() { sp.dialData(m) })
		case protocol.Kick:
			select {
			case sp.kicks <- kickSeen{Kick: m, at: time.Now()}:
			default:
			}
		case protocol.Close:
			select {
			case sp.closed <- m.Code:
			default:
			}
		}
	}
}

func (sp *standInSpace) dialData(m protocol.OpenData) {
	d := websocket.Dialer{TLSClientConfig: sp.relay.tlsConfig()}
	ws, _, err := d.Dial("wss://"+sp.relay.addr+m.Path, http.Header{"Authorization": {"Bearer " + m.Token}})
	if err != nil {
		sp.t.Errorf("data dial: %v", err)
		return
	}
	sp.serveConn(tunnel.NewWSConn(ws), true)
}

func (sp *standInSpace) accept() {
	for {
		st, err := sp.mux.AcceptStream()
		if err != nil {
			return
		}
		sp.wg.Go(func() { sp.serveConn(st, false) })
	}
}

// serveConn checks a stream's header and grant, then hands it to the
// HTTP server; a bad one is closed unanswered.
func (sp *standInSpace) serveConn(c net.Conn, data bool) {
	_ = c.SetReadDeadline(time.Now().Add(protocol.HeaderTimeout))
	h, err := protocol.ReadHeader(c)
	if err != nil {
		sp.t.Errorf("stream header: %v", err)
		c.Close()
		return
	}
	g, err := protocol.VerifyGrant(ed25519.PublicKey(sp.welcome.GrantKey), h.Grant, sp.welcome.Computer, time.Now())
	if err != nil {
		sp.t.Errorf("grant: %v", err)
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	sp.ln.ch <- &grantConn{Conn: c, info: connInfo{grant: g, data: data}}
}

func (sp *standInSpace) close() {
	_ = sp.mux.Close()
	_ = sp.ws.Close()
	sp.srv.Close()
	sp.ln.Close()
	sp.wg.Wait()
}

// waitClosed answers the close code the relay ended the session with.
func (sp *standInSpace) waitClosed() protocol.CloseCode {
	sp.t.Helper()
	select {
	case c := <-sp.closed:
		return c
	case <-time.After(15 * time.Second):
		sp.t.Fatal("the relay did not end the session")
	}
	return 0
}

// chanListener hands the HTTP server the streams the Space accepted.
type chanListener struct {
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l *chanListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// echoHandler answers what reached the Space: method, path, query, the
// headers the relay must strip or keep, the grant, and the body's length.
type echoAnswer struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Query       string `json:"query"`
	Auth        string `json:"auth"`
	APIKey      string `json:"api_key"`
	Idempotency string `json:"idempotency"`
	Person      string `json:"person"`
	PersonName  string `json:"person_name"`
	Role        string `json:"role"`
	Computer    string `json:"computer"`
	Data        bool   `json:"data"`
	BodyLen     int    `json:"body_len"`
	Body        string `json:"body"`
}

func echoHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v1/elsewhere?x=1", http.StatusFound)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			typ, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if err := ws.WriteMessage(typ, b); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		info, _ := r.Context().Value(grantCtxKey{}).(connInfo)
		b, _ := io.ReadAll(r.Body)
		a := echoAnswer{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"),
			APIKey: r.Header.Get("X-API-Key"), Idempotency: r.Header.Get("Idempotency-Key"),
			Person: info.grant.Person, PersonName: info.grant.PersonName, Role: string(info.grant.Role), Computer: info.grant.Computer,
			Data: info.data, BodyLen: len(b)}
		if len(b) < 1024 {
			a.Body = string(b)
		}
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/content") {
			w.Header().Set("Content-Type", "application/octet-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		_ = json.NewEncoder(w).Encode(a)
	})
	return mux
}

func decodeEcho(t testing.TB, b []byte) echoAnswer {
	t.Helper()
	var a echoAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("echo answer: %v: %s", err, b)
	}
	return a
}

// eventually polls cond until it holds (or fails the test after 15 s).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
