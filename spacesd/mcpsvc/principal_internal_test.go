package mcpsvc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// routes are a test service's: one route per role class, a route that
// says who called it, and one that holds until its request ends.
type routes struct{ held chan struct{} }

func (r routes) Routes() []server.Route {
	who := func(w http.ResponseWriter, req *http.Request) {
		c := server.CallerOf(req.Context())
		if c.Principal == nil {
			_, _ = io.WriteString(w, "token")
			return
		}
		_, _ = io.WriteString(w, c.Principal.Person+"/"+string(c.Principal.Role))
	}
	return []server.Route{
		{Method: http.MethodPut, Path: "/t/owner", Handler: who}, // no Roles: the owner's alone, as attach and rotate
		{Method: http.MethodPost, Path: "/t/edit", Roles: server.EditorRoles(), Handler: who},
		{Method: http.MethodGet, Path: "/t/who", Roles: server.ViewerRoles(), Handler: who},
		{Method: http.MethodGet, Path: "/t/hold", Roles: server.EditorRoles(), Handler: func(w http.ResponseWriter, req *http.Request) {
			r.held <- struct{}{}
			<-req.Context().Done()
		}},
	}
}
func (routes) Features() map[api.Feature]server.Probe { return nil }
func (routes) Limits(*api.Limits)                     {}
func (routes) Close()                                 {}

// selfEnv is a daemon's server with the MCP service and the test routes,
// served on loopback with a token.
type selfEnv struct {
	srv  *server.Server
	svc  *Service
	auth *server.Auth
	held chan struct{}
}

func newSelfEnv(t *testing.T, token string) *selfEnv {
	t.Helper()
	e := &selfEnv{auth: server.NewAuth(token, nil), held: make(chan struct{}, 4)}
	mcp := func(h server.Host) (server.Service, error) {
		s, err := New(nil, Options{})(h)
		if err == nil {
			e.svc = s.(*Service)
		}
		return s, err
	}
	srv, err := server.New(server.Config{Auth: e.auth, Logger: slog.New(slog.DiscardHandler),
		Services: []server.NewService{mcp, func(server.Host) (server.Service, error) { return routes{e.held}, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	testenv.Serve(t, srv.Serve)
	return e
}

func relayed(name string, role server.Role, gen uint64) server.Caller {
	return server.Caller{Generation: gen, Principal: &server.Principal{Person: "u-" + name, PersonName: name, Role: role, Grant: "g", Via: server.ViaRelay}}
}

// do calls a route with cl and answers the answer's body, or its error's kind.
func do(ctx context.Context, cl *client.Client, method, path string) (string, api.Kind) {
	resp, err := cl.Do(ctx, method, path, nil, nil, "")
	if err != nil {
		return "", api.KindOf(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), ""
}

// The in-process client of a relayed caller is served as that same
// principal: each inner route applies the caller's role (an editor's call
// of an owner-only route is refused, as a viewer's of an editor's), and a
// person shared again with a new role gets a client of that role, not the
// old one's. The token's caller is served as the token's holder.
func TestSelfClientActsAsCaller(t *testing.T) {
	t.Parallel()
	e := newSelfEnv(t, "the-token")
	for _, c := range []struct {
		name   string
		caller server.Caller
		token  string
		who    string
		// denied are the routes the caller may not call.
		owner, edit api.Kind
	}{
		{"editor", relayed("bob", server.RoleEditor, 0), "", "u-bob/editor", api.KindPermissionDenied, ""},
		{"same person as viewer", relayed("bob", server.RoleViewer, 0), "", "u-bob/viewer", api.KindPermissionDenied, api.KindPermissionDenied},
		{"owner through the relay", relayed("alice", server.RoleOwner, 0), "", "u-alice/owner", "", ""},
		{"relayed, a token shown besides", relayed("eve", server.RoleEditor, 0), "the-token", "u-eve/editor", api.KindPermissionDenied, ""},
		{"token", server.Caller{}, "the-token", "token", "", ""},
		{"no token", server.Caller{}, "", "", api.KindUnauthenticated, api.KindUnauthenticated},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := e.svc.self.clientFor(c.caller, c.token)
			if err != nil {
				t.Fatal(err)
			}
			if c.who != "" {
				if got, kind := do(t.Context(), cl, http.MethodGet, "/t/who"); got != c.who {
					t.Errorf("who: %q (%s), want %q", got, kind, c.who)
				}
			}
			if _, kind := do(t.Context(), cl, http.MethodPut, "/t/owner"); kind != c.owner {
				t.Errorf("the owner's route: kind %q, want %q", kind, c.owner)
			}
			if _, kind := do(t.Context(), cl, http.MethodPost, "/t/edit"); kind != c.edit {
				t.Errorf("the editor's route: kind %q, want %q", kind, c.edit)
			}
		})
	}
	// A daemon without a token (loopback only) answers the token's
	// holder, the owner, without one: a relayed editor is still only that.
	open := newSelfEnv(t, "")
	cl, err := open.svc.self.clientFor(relayed("bob", server.RoleEditor, 0), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := do(t.Context(), cl, http.MethodGet, "/t/who"); got != "u-bob/editor" {
		t.Errorf("an editor on a daemon without a token: who %q", got)
	}
	if _, kind := do(t.Context(), cl, http.MethodPut, "/t/owner"); kind != api.KindPermissionDenied {
		t.Errorf("an editor on a daemon without a token, the owner's route: kind %q, want permission_denied", kind)
	}

	editor, _ := e.svc.self.clientFor(relayed("bob", server.RoleEditor, 0), "")
	viewer, _ := e.svc.self.clientFor(relayed("bob", server.RoleViewer, 0), "")
	again, _ := e.svc.self.clientFor(relayed("bob", server.RoleEditor, 0), "")
	if editor == viewer || editor != again {
		t.Fatal("the principal clients are not one per person and role")
	}
}

// A kick of the person ends their client's call in flight and refuses its
// next one; the person's next client (shared again) is a new one. Past
// the bound, a client let go still ends its call.
func TestSelfClientKickAndBound(t *testing.T) {
	t.Parallel()
	e := newSelfEnv(t, "the-token")
	bob := relayed("bob", server.RoleEditor, 0)
	cl, err := e.svc.self.clientFor(bob, "")
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan api.Kind, 1)
	go func() { _, kind := do(context.Background(), cl, http.MethodGet, "/t/hold"); ended <- kind }()
	<-e.held
	if n := e.srv.Kick(func(p string, _ server.Role) bool { return p == "u-bob" }); n == 0 {
		t.Fatal("the kick ended nothing of bob's")
	}
	select {
	case kind := <-ended:
		if kind == "" {
			t.Fatal("bob's call in flight answered after his kick")
		}
	case <-time.After(time.Minute):
		t.Fatal("bob's call in flight outlived his kick")
	}
	if got, kind := do(t.Context(), cl, http.MethodGet, "/t/who"); kind == "" {
		t.Fatalf("bob's kicked client still calls: %q", got)
	}
	fresh, err := e.svc.self.clientFor(bob, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := do(t.Context(), fresh, http.MethodGet, "/t/who"); got != "u-bob/editor" {
		t.Fatalf("bob shared again: %q", got)
	}

	first, _ := e.svc.self.clientFor(relayed("p0", server.RoleEditor, 0), "")
	if got, _ := do(t.Context(), first, http.MethodGet, "/t/who"); got != "u-p0/editor" {
		t.Fatalf("p0: %q", got)
	}
	for i := 1; i <= maxPrincipalClients; i++ {
		if _, err := e.svc.self.clientFor(relayed(fmt.Sprint("p", i), server.RoleEditor, 0), ""); err != nil {
			t.Fatal(err)
		}
	}
	e.svc.self.mu.Lock()
	n := len(e.svc.self.principals)
	e.svc.self.mu.Unlock()
	if n > maxPrincipalClients {
		t.Fatalf("%d principal clients kept, bound %d", n, maxPrincipalClients)
	}
	// Let go or not, p0's client serves p0 while its connection lives (a
	// call in flight's next request).
	if got, kind := do(t.Context(), first, http.MethodGet, "/t/who"); got != "u-p0/editor" {
		t.Fatalf("p0's client after it was let go: %q %s", got, kind)
	}
}

// A rotation of the token ends the principals' clients made under the old
// one, as it ends their relayed connections; the next generation's caller
// gets a client of its own.
func TestSelfClientRotation(t *testing.T) {
	t.Parallel()
	e := newSelfEnv(t, "the-token")
	gen := e.auth.Generation()
	old, err := e.svc.self.clientFor(relayed("bob", server.RoleEditor, gen), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, kind := do(t.Context(), old, http.MethodGet, "/t/who"); got != "u-bob/editor" {
		t.Fatalf("before the rotation: %q %s", got, kind)
	}
	e.auth.Rotate("the-next-token")
	if got, kind := do(t.Context(), old, http.MethodGet, "/t/who"); kind == "" {
		t.Fatalf("the old generation's client after the rotation: %q", got)
	}
	fresh, err := e.svc.self.clientFor(relayed("bob", server.RoleEditor, e.auth.Generation()), "")
	if err != nil {
		t.Fatal(err)
	}
	if fresh == old {
		t.Fatal("the new generation reuses the old one's client")
	}
	if got, kind := do(t.Context(), fresh, http.MethodGet, "/t/who"); got != "u-bob/editor" {
		t.Fatalf("after the rotation, the new generation: %q %s", got, kind)
	}
}
