package relayd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/store"
)

// The admin API: HTTP over the unix socket DataDir/admin.sock, mode 0600:
// whoever may open it is the relay's admin. The CLI (cua-relay user ...,
// token create, computer ls) talks to the running relay through it, and
// never opens the store behind the relay's back.

// AdminHandler is the admin API's routes.
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+relayapi.PathAdminUsers, s.adminListUsers)
	mux.HandleFunc("POST "+relayapi.PathAdminUsers, s.adminCreateUser)
	mux.HandleFunc("DELETE "+relayapi.PathAdminUser, s.adminDeleteUser)
	mux.HandleFunc("POST "+relayapi.PathAdminTokens, s.adminCreateToken)
	mux.HandleFunc("GET "+relayapi.PathAdminComputers, s.adminListComputers)
	mux.HandleFunc("GET "+relayapi.PathAdminMetrics, s.adminMetrics)
	mux.HandleFunc("GET "+relayapi.PathAdminStatus, s.adminStatus)
	mux.HandleFunc("POST "+relayapi.PathAdminBackup, s.adminBackup)
	mux.HandleFunc("GET "+relayapi.PathAdminTeams, s.adminListTeams)
	mux.HandleFunc("POST "+relayapi.PathAdminTeams, s.adminCreateTeam)
	mux.HandleFunc("POST "+relayapi.PathAdminTeamMembers, s.adminAddMember)
	mux.HandleFunc("DELETE "+relayapi.PathAdminTeamMember, s.adminRemoveMember)
	mux.HandleFunc("POST "+relayapi.PathAdminDrain, s.adminDrain)
	mux.HandleFunc("GET "+relayapi.PathAdminNode, s.adminNode)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, api.Errorf(api.KindNotFound, "%s %s: no such admin route", r.Method, r.URL.Path))
	})
	return mux
}

// maxSocketPath is the longest unix socket path every platform takes
// (sun_path: 108 bytes on Linux, 104 on macOS, with its NUL).
const maxSocketPath = 103

// ListenAdmin listens on dataDir/admin.sock (mode 0600). A socket left by
// a relay that died is replaced; one a running relay answers on is not
// (two relays on one data dir is an error).
func ListenAdmin(dataDir string) (net.Listener, error) {
	p := filepath.Join(dataDir, relayapi.AdminSocket)
	if len(p) > maxSocketPath {
		return nil, api.Errorf(api.KindInvalidArgument, "admin socket %s: %d bytes, over the %d a unix socket's path may have; use a shorter --data-dir", p, len(p), maxSocketPath)
	}
	if c, err := net.DialTimeout("unix", p, time.Second); err == nil {
		c.Close()
		return nil, api.Errorf(api.KindInvalidArgument, "admin socket %s: another relay serves this data dir", p)
	}
	_ = os.Remove(p)
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, api.Errorf(api.KindIO, "admin socket %s: %w", p, err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		ln.Close()
		return nil, api.Errorf(api.KindIO, "admin socket %s: %w", p, err)
	}
	return ln, nil
}

// ServeAdmin serves the admin API on ln until ctx ends, then removes the
// socket.
func (s *Server) ServeAdmin(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.AdminHandler(), ReadHeaderTimeout: ReadHeaderTimeout}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	<-errc
	return nil
}

func (s *Server) adminListUsers(w http.ResponseWriter, r *http.Request) {
	us, err := s.cfg.Store.Users(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	if us == nil {
		us = []store.User{}
	}
	writeJSON(w, http.StatusOK, relayapi.UserList{Users: us})
}

func (s *Server) adminCreateUser(w http.ResponseWriter, r *http.Request) {
	var req relayapi.CreateUser
	if err := readJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	u, err := s.cfg.Store.CreateUser(r.Context(), req.Name, req.Email)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, u)
}

// adminDeleteUser removes a user with their tokens and computers; the
// computers' sessions end with token_revoked.
func (s *Server) adminDeleteUser(w http.ResponseWriter, r *http.Request) {
	gone, err := s.cfg.Store.DeleteUser(r.Context(), r.PathValue("name"))
	for _, c := range gone {
		s.endSession(c, protocol.CloseTokenRevoked, "its owner was removed")
		s.audit(store.AuditUnregister, c, "owner "+r.PathValue("name")+" removed")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, relayapi.Deleted{Deleted: true})
}

func (s *Server) adminCreateToken(w http.ResponseWriter, r *http.Request) {
	u, tok, err := s.cfg.Store.CreateUserToken(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, relayapi.UserToken{User: u.Name, Token: tok})
}

func (s *Server) adminListComputers(w http.ResponseWriter, r *http.Request) {
	cs, err := s.cfg.Store.Computers(r.Context(), "")
	if err != nil {
		writeError(w, err)
		return
	}
	names := map[string]string{}
	out := relayapi.ComputerList{Computers: make([]relayapi.Computer, 0, len(cs))}
	for _, c := range cs {
		n, ok := names[c.Owner]
		if !ok {
			if u, err := s.cfg.Store.User(r.Context(), c.Owner); err == nil {
				n = u.Name
			}
			names[c.Owner] = n
		}
		out.Computers = append(out.Computers, s.computerJSON(r.Context(), c, n))
	}
	writeJSON(w, http.StatusOK, out)
}

// AdminClient calls a running relay's admin socket.
type AdminClient struct {
	hc *http.Client
}

// NewAdminClient talks to the relay whose data dir is dataDir.
func NewAdminClient(dataDir string) *AdminClient {
	p := filepath.Join(dataDir, relayapi.AdminSocket)
	return &AdminClient{hc: &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", p)
			if err != nil {
				return nil, api.Errorf(api.KindRelay, "admin socket %s: %w (is cua-relay serve running with this --data-dir?)", p, err)
			}
			return c, nil
		}},
	}}
}

// CreateUser adds a user.
func (c *AdminClient) CreateUser(ctx context.Context, name, email string) (relayapi.User, error) {
	var u relayapi.User
	err := c.call(ctx, http.MethodPost, relayapi.PathAdminUsers, relayapi.CreateUser{Name: name, Email: email}, &u)
	return u, err
}

// Users lists the users.
func (c *AdminClient) Users(ctx context.Context) ([]relayapi.User, error) {
	var l relayapi.UserList
	err := c.call(ctx, http.MethodGet, relayapi.PathAdminUsers, nil, &l)
	return l.Users, err
}

// DeleteUser removes a user, their tokens and their computers.
func (c *AdminClient) DeleteUser(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodDelete, fill(relayapi.PathAdminUser, name), nil, &relayapi.Deleted{})
}

// CreateToken mints an API token for the user (shown once).
func (c *AdminClient) CreateToken(ctx context.Context, user string) (string, error) {
	var t relayapi.UserToken
	err := c.call(ctx, http.MethodPost, fill(relayapi.PathAdminTokens, user), nil, &t)
	return t.Token, err
}

// Computers lists every computer.
func (c *AdminClient) Computers(ctx context.Context) ([]relayapi.Computer, error) {
	var l relayapi.ComputerList
	err := c.call(ctx, http.MethodGet, relayapi.PathAdminComputers, nil, &l)
	return l.Computers, err
}

// Drain drains the node (Server.Drain) and answers its report: the call
// lasts up to the grace period (the server's default for a zero one).
func (c *AdminClient) Drain(ctx context.Context, req relayapi.DrainRequest) (relayapi.DrainReport, error) {
	grace := DefaultDrainGrace
	if req.GraceMS > 0 {
		grace = time.Duration(req.GraceMS) * time.Millisecond
	}
	long := *c.hc
	long.Timeout = grace + c.hc.Timeout
	var rep relayapi.DrainReport
	err := (&AdminClient{hc: &long}).call(ctx, http.MethodPost, relayapi.PathAdminDrain, req, &rep)
	return rep, err
}

// Node is the node's state.
func (c *AdminClient) Node(ctx context.Context) (relayapi.NodeStatus, error) {
	var st relayapi.NodeStatus
	err := c.call(ctx, http.MethodGet, relayapi.PathAdminNode, nil, &st)
	return st, err
}

// transportErr is the error of a call that reached no answer: the dialer's
// own (no relay on the socket) as it is.
func (c *AdminClient) transportErr(err error, method, path string) error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	return api.Errorf(api.KindRelay, "admin %s %s: %w", method, path, err)
}

// fill puts name in a route's {name}.
func fill(route, name string) string {
	return strings.Replace(route, "{name}", url.PathEscape(name), 1)
}

func escape(s string) string { return url.PathEscape(s) }

func (c *AdminClient) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://relay-admin"+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportErr(err, method, path)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return api.Errorf(api.KindRelay, "admin %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var env api.ErrorEnvelope
		if json.Unmarshal(b, &env) == nil && env.Error != nil {
			env.Error.Status = resp.StatusCode
			return env.Error
		}
		return api.Errorf(api.KindRelay, "admin %s %s: HTTP %d", method, path, resp.StatusCode)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return api.Errorf(api.KindJSON, "admin %s %s: %v", method, path, err)
	}
	return nil
}
