package relaysvc_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/yamux"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/tunnel"
)

// standIn is a minimal stand-in for cua-relay, IN THE TEST ONLY: the real
// relay is another program (relay/...), which a package of the daemon may
// not import; the lead's end-to-end suite runs the real one. It does what
// the Space's side needs of a relay and no more: it upgrades /v1/attach
// after checking the bearer, runs yamux.Server over tunnel.WSConn, answers
// Hello with Welcome, answers pings, and lets the test open streams with
// a signed grant, send control frames, and serve /v1/data.
type standIn struct {
	t     *testing.T
	srv   *httptest.Server
	URL   string // wss://127.0.0.1:PORT
	CAPEM string
	// Fingerprint is its certificate's, for a Space that pins it.
	Fingerprint string
	Token       string // the computer token it accepts

	mu        sync.Mutex
	key       ed25519.PrivateKey
	computer  string
	heartbeat time.Duration
	refuse    int  // while set, /v1/attach answers this status
	mute      bool // while set, pings get no pong
	bearers   []string
	hellos    []protocol.Hello
	cur       *relaySession
	sessions  chan *relaySession
	// data: the data connections dialled in, by their token.
	data map[string]chan net.Conn
}

// relaySession is one control session the stand-in accepted.
type relaySession struct {
	sess *yamux.Session
	w    *protocol.Writer
	// closed: the Space's Close frame (or nothing: the session ended).
	frames chan protocol.Message
	ended  chan struct{}
}

func newStandIn(t *testing.T) *standIn {
	t.Helper()
	return newStandInOf(t, tlstest.NewCA(t))
}

// newStandInOf is a stand-in whose certificate ca signs: several of them
// are the nodes of one relay, one trust for all (give them one key and
// token with sameRelayAs).
func newStandInOf(t *testing.T, ca *tlstest.CA) *standIn {
	t.Helper()
	tok, err := protocol.NewToken(protocol.TokenComputer)
	if err != nil {
		t.Fatal(err)
	}
	s := &standIn{t: t, Token: tok, key: newKey(t), computer: "box", heartbeat: time.Minute,
		sessions: make(chan *relaySession, 16), data: map[string]chan net.Conn{}}
	mux := http.NewServeMux()
	mux.HandleFunc(relayapi.PathAttach, s.attach)
	mux.HandleFunc(relayapi.PathData, s.dataConn)
	mux.HandleFunc(relayapi.PathHealth, func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(relayapi.Health{Relay: relayapi.RelayName, Version: "stand-in", Node: "node-1", Status: "ok"})
	})
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "127.0.0.1")}}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.URL = "wss://" + s.srv.Listener.Addr().String()
	s.Fingerprint = api.CertFingerprint(s.srv.TLS.Certificates[0].Certificate[0])
	s.CAPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}))
	return s
}

func newKey(t *testing.T) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func bearer(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok
}

func (s *standIn) attach(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	tok := bearer(r)
	s.bearers = append(s.bearers, tok)
	refuse, good := s.refuse, s.Token
	key, computer, hb := s.key, s.computer, s.heartbeat
	s.mu.Unlock()
	if refuse == 0 && tok != good {
		refuse = http.StatusUnauthorized
	}
	if refuse != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(refuse)
		_ = json.NewEncoder(w).Encode(api.ErrorEnvelope{Error: api.Errorf(api.KindUnauthenticated, "no").WithReason(protocol.CloseTokenInvalid.String())})
		return
	}
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	sess, err := yamux.Server(tunnel.NewWSConn(ws), tunnel.Config(nil))
	if err != nil {
		return
	}
	ctrl, err := sess.Accept()
	if err != nil {
		sess.Close()
		return
	}
	rd := protocol.NewReader(ctrl)
	m, err := rd.ReadMessage()
	hello, ok := m.(protocol.Hello)
	if err != nil || !ok {
		sess.Close()
		return
	}
	rs := &relaySession{sess: sess, w: protocol.NewWriter(ctrl, time.Second*5), frames: make(chan protocol.Message, 64), ended: make(chan struct{})}
	// A write error is not the end: yamux may report one for a frame
	// that went out when the Space closes at once (as after a key change).
	_ = rs.w.WriteMessage(protocol.Welcome{Version: protocol.Version, GrantKey: key.Public().(ed25519.PublicKey),
		Heartbeat: protocol.MillisOf(hb), Node: "node-1", Computer: computer})
	s.mu.Lock()
	s.hellos = append(s.hellos, hello)
	s.cur = rs
	s.mu.Unlock()
	go func() {
		defer close(rs.ended)
		defer sess.Close()
		for {
			m, err := rd.ReadMessage()
			if err != nil {
				return
			}
			if p, ok := m.(protocol.Ping); ok {
				s.mu.Lock()
				mute := s.mute
				s.mu.Unlock()
				if !mute {
					_ = rs.w.WriteMessage(protocol.Pong(p))
				}
				continue
			}
			rs.frames <- m
		}
	}()
	s.sessions <- rs
}

// dataConn is /v1/data: a data token the test announced in an OpenData.
func (s *standIn) dataConn(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ch := s.data[bearer(r)]
	delete(s.data, bearer(r))
	s.mu.Unlock()
	if ch == nil {
		http.Error(w, "bad data token", http.StatusUnauthorized)
		return
	}
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	ch <- tunnel.NewWSConn(ws)
}

// next waits for the next session the Space opens.
func (s *standIn) next(t *testing.T) *relaySession {
	t.Helper()
	select {
	case rs := <-s.sessions:
		return rs
	case <-time.After(time.Minute):
		t.Fatal("the Space never attached")
		return nil
	}
}

func (s *standIn) attaches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bearers)
}

func (s *standIn) lastBearer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bearers[len(s.bearers)-1]
}

func (s *standIn) setKey(k ed25519.PrivateKey) {
	s.mu.Lock()
	s.key = k
	s.mu.Unlock()
}

func (s *standIn) setRefuse(status int) {
	s.mu.Lock()
	s.refuse = status
	s.mu.Unlock()
}

// grant signs a grant for person, changed by mut, with key (nil: the relay's).
func (s *standIn) grant(t *testing.T, person string, key ed25519.PrivateKey, mut func(*protocol.Grant)) []byte {
	t.Helper()
	s.mu.Lock()
	if key == nil {
		key = s.key
	}
	g := protocol.NewGrant(s.computer, person, person+"-name", protocol.RoleOwner, time.Now())
	s.mu.Unlock()
	if mut != nil {
		mut(&g)
	}
	b, err := protocol.SignGrant(key, g)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// open opens a relayed stream with a header carrying grant.
func (rs *relaySession) open(t *testing.T, grant []byte) net.Conn {
	t.Helper()
	st, err := rs.sess.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := protocol.WriteHeader(st, protocol.Header{Version: protocol.Version, Kind: protocol.StreamHTTP, Grant: grant}); err != nil {
		t.Fatal(err)
	}
	return st
}

// send writes a control frame to the Space.
func (rs *relaySession) send(t *testing.T, m protocol.Message) {
	t.Helper()
	if err := rs.w.WriteMessage(m); err != nil {
		t.Fatal(err)
	}
}

// dialer is a client.Dialer whose every connection is a relayed stream of
// person: what the relay does for a caller.
func (s *standIn) dialer(t *testing.T, rs *relaySession, person string) func(context.Context, string, string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) {
		return rs.open(t, s.grant(t, person, nil, nil)), nil
	}
}

// get sends one GET over c and answers the status (0: no answer).
func get(c net.Conn, path string) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://relay"+path, nil)
	if err := req.Write(c); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
