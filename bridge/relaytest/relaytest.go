// Package relaytest is a STAND-IN for cua-relay, for the bridge's tests
// only: the real relay is another program (relay/, which the bridge may not
// import), and the end-to-end suite runs it. The stand-in serves the user
// API (relayapi: /v1/me, /v1/computers) over real TLS from a test CA, and
// reaches an "attached" computer by proxying /c/<computer>/... to its real
// daemon with the daemon's token, as the relay's grant-carrying stream
// would. SpaceFront stands in for a daemon's relay_attach (GET/PUT/DELETE
// /v1/relay) in front of a real daemon that lacks it: its PUT with a
// computer token the stand-in issued is what attaches the computer.
package relaytest

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// Relay is the stand-in relay.
type Relay struct {
	URL string
	// Fingerprint pins its certificate; CAFile is the test CA's PEM.
	Fingerprint string
	CAFile      string
	// Handshakes counts the TLS handshakes it was offered.
	Handshakes *atomic.Int64

	srv *httptest.Server

	mu        sync.Mutex
	users     map[[32]byte]relayapi.User // by token hash
	computers map[string]*computer
	requests  map[string]int    // "METHOD /path" of every request
	teams     map[string]string // user name -> team id
}

type computer struct {
	relayapi.Computer
	token [32]byte
	// target is the daemon the computer's session reaches, once attached.
	target      *url.URL
	targetToken string
	// shares and audit are the computer's (shares.go).
	shares []relayapi.Share
	audit  []relayapi.AuditLine
}

// Start serves a stand-in relay until the test ends.
func Start(t testing.TB) *Relay {
	t.Helper()
	ca := tlstest.NewCA(t)
	cert := ca.Issue(t, "127.0.0.1")
	r := &Relay{users: map[[32]byte]relayapi.User{}, computers: map[string]*computer{}, requests: map[string]int{}, teams: map[string]string{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	r.Handshakes = tlstest.CountHandshakes(cfg)
	r.srv.TLS = cfg
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	r.URL = r.srv.URL
	r.Fingerprint = api.CertFingerprint(cert.Certificate[0])
	r.CAFile = ca.WriteCA(t, t.TempDir())
	return r
}

// AddUser makes a user and answers its API token (cuau_...).
func (r *Relay) AddUser(t testing.TB, name string) string {
	t.Helper()
	tok, err := protocol.NewToken(protocol.TokenUser)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users[protocol.HashToken(tok)] = relayapi.User{ID: "u-" + name, Name: name, CreatedMS: time.Now().UnixMilli()}
	return tok
}

// Attach connects a computer of owner to a daemon at daemonURL (as a
// Space whose session is up), creating it if need be.
func (r *Relay) Attach(owner, name, daemonURL, daemonToken string) {
	u, _ := url.Parse(daemonURL)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.computers[name]
	if c == nil {
		c = &computer{Computer: relayapi.Computer{Name: name, Owner: owner, CreatedMS: time.Now().UnixMilli()}}
		r.computers[name] = c
	}
	c.Online, c.SinceMS, c.DaemonVersion = true, time.Now().UnixMilli(), "test"
	c.target, c.targetToken = u, daemonToken
}

// Online reports whether the computer is attached now.
func (r *Relay) Online(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.computers[name]
	return c != nil && c.Online
}

// Exists reports whether the relay holds a computer of that name.
func (r *Relay) Exists(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.computers[name] != nil
}

// Requests answers how many requests "METHOD /path" the relay served.
func (r *Relay) Requests(methodPath string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[methodPath]
}

// Close stops the relay now (a relay that cannot be reached).
func (r *Relay) Close() { r.srv.Close() }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, e *api.Error) {
	writeJSON(w, status, api.ErrorEnvelope{Error: e})
}

func (r *Relay) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests[req.Method+" "+req.URL.Path]++
	r.mu.Unlock()
	user, ok := r.user(req)
	if !ok {
		writeError(w, http.StatusUnauthorized, api.Errorf(api.KindUnauthenticated, "relay: the user token is wrong"))
		return
	}
	switch p := req.URL.Path; {
	case p == relayapi.PathMe && req.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, relayapi.Me{User: user})
	case p == relayapi.PathComputers && req.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, relayapi.ComputerList{Computers: r.list(user)})
	case p == relayapi.PathComputers && req.Method == http.MethodPost:
		r.create(w, req, user)
	case strings.HasPrefix(p, relayapi.PathComputers+"/") && strings.HasSuffix(p, "/shares"):
		r.sharesRoute(w, req, user, strings.TrimSuffix(strings.TrimPrefix(p, relayapi.PathComputers+"/"), "/shares"))
	case strings.HasPrefix(p, relayapi.PathComputers+"/"):
		r.one(w, req, user, strings.TrimPrefix(p, relayapi.PathComputers+"/"))
	case strings.HasPrefix(p, relayapi.PrefixComputer):
		r.proxy(w, req, user)
	default:
		writeError(w, http.StatusNotFound, api.Errorf(api.KindNotFound, "relay: no route %s %s", req.Method, p))
	}
}

func (r *Relay) user(req *http.Request) (relayapi.User, bool) {
	tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return relayapi.User{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for h, u := range r.users {
		if protocol.TokenEqual(h, tok) {
			return u, true
		}
	}
	return relayapi.User{}, false
}

func (r *Relay) list(user relayapi.User) []relayapi.Computer {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []relayapi.Computer{}
	for _, c := range r.computers {
		switch role := r.sharedRole(c, user.Name); {
		case c.Owner == user.Name:
			comp := c.Computer
			comp.Role = protocol.RoleOwner
			out = append(out, comp)
		case role != "":
			// Shared with the user: listed with the share's role.
			comp := c.Computer
			comp.Role = role
			out = append(out, comp)
		}
	}
	return out
}

// mine answers the user's computer of that name; another user's is none.
func (r *Relay) mine(user relayapi.User, name string) *computer {
	c := r.computers[name]
	if c == nil || c.Owner != user.Name {
		return nil
	}
	return c
}

func (r *Relay) create(w http.ResponseWriter, req *http.Request, user relayapi.User) {
	var in relayapi.CreateComputer
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil || protocol.CheckComputerName(in.Name) != nil {
		writeError(w, http.StatusBadRequest, api.Errorf(api.KindInvalidArgument, "relay: bad computer name"))
		return
	}
	tok, _ := protocol.NewToken(protocol.TokenComputer)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.computers[in.Name]
	if c != nil && c.Owner != user.Name {
		writeError(w, http.StatusConflict, api.Errorf(api.KindPermissionDenied, "relay: computer %s is another user's", in.Name))
		return
	}
	if c == nil {
		c = &computer{Computer: relayapi.Computer{Name: in.Name, Owner: user.Name, CreatedMS: time.Now().UnixMilli()}}
		r.computers[in.Name] = c
	}
	// A new token ends the session of the old one (token_rotated).
	c.token, c.Online, c.target = protocol.HashToken(tok), false, nil
	u, _ := url.Parse(r.URL)
	writeJSON(w, http.StatusOK, relayapi.ComputerToken{Computer: c.Computer, Token: tok, URLs: []string{"wss://" + u.Host + relayapi.PathAttach}})
}

func (r *Relay) one(w http.ResponseWriter, req *http.Request, user relayapi.User, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.mine(user, name)
	if c == nil {
		writeError(w, http.StatusNotFound, api.Errorf(api.KindNotFound, "relay: no computer %s", name))
		return
	}
	switch req.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, c.Computer)
	case http.MethodDelete:
		delete(r.computers, name)
		writeJSON(w, http.StatusOK, relayapi.Deleted{Deleted: true})
	default:
		writeError(w, http.StatusMethodNotAllowed, api.Errorf(api.KindInvalidArgument, "relay: method %s", req.Method))
	}
}

// proxy reaches the computer's daemon, as the relay's stream would: the
// user's token stripped, the daemon's own token in its place (the real
// relay signs a grant instead).
func (r *Relay) proxy(w http.ResponseWriter, req *http.Request, user relayapi.User) {
	rest := strings.TrimPrefix(req.URL.Path, relayapi.PrefixComputer)
	name, path, _ := strings.Cut(rest, "/")
	r.mu.Lock()
	c := r.mine(user, name)
	if c == nil {
		// A computer shared with the user is reached too; the stand-in
		// does not enforce the role (the Space does, tested with the real
		// relay in test/relay).
		if sc := r.computers[name]; sc != nil && r.sharedRole(sc, user.Name) != "" {
			c = sc
		}
	}
	var target *url.URL
	var tok string
	if c != nil && c.Online {
		target, tok = c.target, c.targetToken
	}
	r.mu.Unlock()
	switch {
	case c == nil:
		writeError(w, http.StatusNotFound, api.Errorf(api.KindNotFound, "relay: no computer %s", name))
		return
	case target == nil:
		writeError(w, http.StatusBadGateway, api.Errorf(api.KindRelay, "relay: computer %s is offline", name))
		return
	}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.URL.Path = "/" + path
		pr.Out.URL.RawPath = ""
		pr.Out.Host = target.Host
		pr.Out.Header.Del("Authorization")
		if tok != "" {
			pr.Out.Header.Set("Authorization", "Bearer "+tok)
		}
	}}
	rp.ServeHTTP(w, req)
}

// SpaceFront stands in for relay_attach in front of a real daemon that
// lacks it: GET/PUT/DELETE /v1/relay are answered here (a PUT with a
// computer token of this relay attaches the computer to daemonURL), its
// capabilities report relay_attach, and every other request goes to the
// daemon unchanged. Its URL is plain http on loopback.
type SpaceFront struct {
	URL string
	// Puts counts the PUT /v1/relay it was sent.
	Puts atomic.Int64

	relay       *Relay
	daemon      *url.URL
	daemonToken string

	mu     sync.Mutex
	status api.RelayStatus
}

// Front serves a SpaceFront for the daemon until the test ends.
func (r *Relay) Front(t testing.TB, daemonURL, daemonToken string) *SpaceFront {
	t.Helper()
	u, err := url.Parse(daemonURL)
	if err != nil {
		t.Fatal(err)
	}
	f := &SpaceFront{relay: r, daemon: u, daemonToken: daemonToken}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Restart forgets the attachment, as a Space restarted without its state.
func (f *SpaceFront) Restart() {
	f.mu.Lock()
	f.status = api.RelayStatus{}
	f.mu.Unlock()
}

func (f *SpaceFront) serve(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("Authorization") != "Bearer "+f.daemonToken {
		writeError(w, http.StatusUnauthorized, api.Errorf(api.KindUnauthenticated, "wrong token"))
		return
	}
	switch {
	case req.URL.Path == api.PathRelay:
		f.relayRoute(w, req)
		return
	case req.URL.Path == api.PathCapabilities && req.Method == http.MethodGet:
		// Plain bytes to rewrite: no compression from the daemon.
		req.Header.Del("Accept-Encoding")
		rec := httptest.NewRecorder()
		f.proxy().ServeHTTP(rec, req)
		var caps api.Capabilities
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &caps) != nil {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		caps.Features[api.FeatureRelayAttach] = api.FeatureStatus{Supported: true}
		f.mu.Lock()
		st := f.status
		f.mu.Unlock()
		caps.Relay = &st
		writeJSON(w, http.StatusOK, caps)
		return
	}
	f.proxy().ServeHTTP(w, req)
}

func (f *SpaceFront) proxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(f.daemon)
		pr.Out.Host = f.daemon.Host
	}}
}

func (f *SpaceFront) relayRoute(w http.ResponseWriter, req *http.Request) {
	switch req.Method {
	case http.MethodGet:
	case http.MethodPut:
		f.Puts.Add(1)
		var in api.RelayAttachRequest
		if err := json.NewDecoder(req.Body).Decode(&in); err != nil || len(in.URLs) == 0 || in.Token == "" {
			writeError(w, http.StatusBadRequest, api.Errorf(api.KindInvalidArgument, "relay attach: urls and token are required"))
			return
		}
		if in.Fingerprint != f.relay.Fingerprint && in.CAPEM == "" {
			writeError(w, http.StatusBadRequest, api.Errorf(api.KindInvalidArgument, "relay attach: the relay's trust is not the stand-in's"))
			return
		}
		name, ok := f.relay.attachByToken(in.Token, f.daemon.String(), f.daemonToken)
		f.mu.Lock()
		f.status = api.RelayStatus{Attached: true, URLs: in.URLs, URL: in.URLs[0], Computer: name, Connected: ok, Fingerprint: in.Fingerprint}
		if ok {
			f.status.ConnectedSinceMS = time.Now().UnixMilli()
		} else {
			f.status.LastError = "token_invalid"
		}
		f.mu.Unlock()
	case http.MethodDelete:
		f.mu.Lock()
		was := f.status.Attached
		name := f.status.Computer
		f.status = api.RelayStatus{}
		f.mu.Unlock()
		if name != "" {
			f.relay.detach(name)
		}
		writeJSON(w, http.StatusOK, api.RelayDetached{Detached: was})
		return
	default:
		writeError(w, http.StatusMethodNotAllowed, api.Errorf(api.KindInvalidArgument, "method %s", req.Method))
		return
	}
	f.mu.Lock()
	st := f.status
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

// attachByToken is the control session's handshake: the computer whose
// token it is goes online, reaching the daemon.
func (r *Relay) attachByToken(token, daemonURL, daemonToken string) (string, bool) {
	u, _ := url.Parse(daemonURL)
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, c := range r.computers {
		if protocol.TokenEqual(c.token, token) {
			c.Online, c.SinceMS, c.DaemonVersion = true, time.Now().UnixMilli(), "test"
			c.target, c.targetToken = u, daemonToken
			return name, true
		}
	}
	return "", false
}

// Detach ends a computer's session (it goes offline).
func (r *Relay) Detach(name string) { r.detach(name) }

func (r *Relay) detach(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.computers[name]; c != nil {
		c.Online, c.target = false, nil
	}
}
