package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// routeRoles is who may call each route of the assembled daemon besides
// its owner: "viewer" (and editor), "editor", or "owner" alone; "public"
// needs no one. A route that is not here fails TestEveryRouteHasItsRoles
// until someone decides, here and in the route's Roles, who may call it.
var routeRoles = map[string]string{
	"GET /health":                     "public",
	"GET /viewer/":                    "public",
	"GET /v1/capabilities":            "viewer",
	"GET /metrics":                    "editor",
	"POST /v1/exec":                   "editor",
	"POST /v1/processes":              "editor",
	"GET /v1/processes":               "editor",
	"GET /v1/processes/{id}":          "editor",
	"GET /v1/processes/{id}/stream":   "editor",
	"POST /v1/processes/{id}/stdin":   "editor",
	"POST /v1/processes/{id}/signal":  "editor",
	"POST /v1/processes/{id}/resize":  "editor",
	"GET /v1/files/stat":              "editor",
	"GET /v1/files/list":              "editor",
	"POST /v1/files/mkdir":            "editor",
	"POST /v1/files/move":             "editor",
	"POST /v1/files/remove":           "editor",
	"GET /v1/files/content":           "editor",
	"PUT /v1/files/content":           "editor",
	"GET /v1/files/watch":             "editor",
	"POST /v1/uploads":                "editor",
	"GET /v1/uploads/{id}":            "editor",
	"PUT /v1/uploads/{id}":            "editor",
	"DELETE /v1/uploads/{id}":         "editor",
	"POST /v1/uploads/{id}/commit":    "editor",
	"GET /v1/windows":                 "viewer",
	"POST /v1/windows/{id}/activate":  "editor",
	"POST /v1/windows/{id}/close":     "editor",
	"POST /v1/windows/{id}/geometry":  "editor",
	"POST /v1/windows/{id}/state":     "editor",
	"POST /v1/apps/launch":            "editor",
	"GET /v1/screenshot":              "viewer",
	"POST /v1/a11y/tree":              "viewer",
	"POST /v1/a11y/find":              "viewer",
	"POST /v1/a11y/action":            "editor",
	"POST /v1/input/move":             "editor",
	"POST /v1/input/click":            "editor",
	"POST /v1/input/drag":             "editor",
	"POST /v1/input/scroll":           "editor",
	"POST /v1/input/key":              "editor",
	"POST /v1/input/type":             "editor",
	"GET /v1/clipboard":               "editor",
	"PUT /v1/clipboard":               "editor",
	"POST /v1/stream/tickets":         "viewer",
	"POST /v1/stream/screen":          "viewer",
	"POST /v1/stream/windows/{id}":    "viewer",
	"GET /v1/stream/sessions":         "editor",
	"DELETE /v1/stream/sessions/{id}": "viewer",
	"GET /v1/stream/ice":              "viewer",
	"GET /ws":                         "editor",
	"POST /cmd":                       "editor",
	"GET /status":                     "editor",
	"POST /mcp":                       "editor",
	"GET /mcp":                        "editor",
	"DELETE /mcp":                     "editor",
	"GET /v1/relay":                   "editor",
	"PUT /v1/relay":                   "owner",
	"DELETE /v1/relay":                "owner",
}

// allowed reports whether who ("viewer", "editor", "owner") may call a
// route of routeRoles' class.
func allowed(class string, who server.Role) bool {
	switch class {
	case "public":
		return true
	case "viewer":
		return who != server.RoleLink
	case "editor":
		return who == server.RoleEditor || who == server.RoleOwner
	}
	return who == server.RoleOwner
}

// Every route of the assembled daemon has its decided roles, in its
// Route.Roles and in routeRoles: a new route fails here until someone
// writes down who may call it.
func TestEveryRouteHasItsRoles(t *testing.T) {
	t.Parallel()
	d := spacesdtest.Start(t, spacesdtest.Options{})
	seen := map[string]bool{}
	for _, rt := range d.Server.RouteTable() {
		name := rt.Method + " " + rt.Path
		seen[name] = true
		class, ok := routeRoles[name]
		if !ok {
			t.Errorf("route %s has no row in routeRoles: decide who may call it (viewer, editor or owner) there and in its Route.Roles", name)
			continue
		}
		if (class == "public") != rt.Public {
			t.Errorf("route %s: public %v, routeRoles says %s", name, rt.Public, class)
		}
		if class == "public" {
			continue
		}
		for _, who := range []server.Role{server.RoleViewer, server.RoleEditor} {
			got := who == server.RoleOwner
			for _, r := range rt.Roles {
				got = got || r == who
			}
			if got != allowed(class, who) {
				t.Errorf("route %s: Roles %v, but routeRoles says %s (so %s may call it: %v)", name, rt.Roles, class, who, allowed(class, who))
			}
		}
	}
	for name := range routeRoles {
		if !seen[name] {
			t.Errorf("routeRoles lists %s, which the daemon does not serve", name)
		}
	}
}

// principalClient is an HTTP client whose every connection the daemon
// serves as p's (what relaysvc does with a relayed stream whose grant
// held).
func principalClient(t *testing.T, d *spacesdtest.Daemon, p server.Principal) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			if err := d.Server.ServeConn(a, p); err != nil {
				t.Errorf("ServeConn: %v", err)
			}
		}()
		return b, nil
	}}}
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// The daemon enforces the roles itself, on every route: a viewer's and
// an editor's call of a route their role does not reach answers
// permission_denied before the route runs (with a token on the request
// or not: a principal's bearer is ignored), and a call their role reaches
// gets past the check (to whatever the route answers an empty request).
func TestRolesAreEnforcedOnEveryRoute(t *testing.T) {
	t.Parallel()
	d := spacesdtest.Start(t, spacesdtest.Options{})
	for _, who := range []server.Role{server.RoleViewer, server.RoleEditor} {
		c := principalClient(t, d, server.Principal{Person: "u-" + string(who), PersonName: string(who), Role: who, Grant: "g-" + string(who), Via: server.ViaRelay})
		for _, rt := range d.Server.RouteTable() {
			name := rt.Method + " " + rt.Path
			if rt.Public {
				continue
			}
			path := pathParam.ReplaceAllString(rt.Path, "1")
			req, err := http.NewRequest(rt.Method, "http://relay"+path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", rt.Body)
			req.Header.Set("Authorization", "Bearer "+d.Token) // ignored on a principal's connection
			resp, err := c.Do(req)
			if err != nil {
				if allowed(routeRoles[name], who) {
					continue // a stream that held on: past the check
				}
				t.Errorf("%s as %s: %v", name, who, err)
				continue
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			var e api.ErrorEnvelope
			_ = json.Unmarshal(b, &e)
			denied := e.Error != nil && e.Error.Kind == api.KindPermissionDenied
			if want := !allowed(routeRoles[name], who); denied != want {
				t.Errorf("%s as %s: %d %s, want denied %v", name, who, resp.StatusCode, b, want)
			}
			if denied && (resp.StatusCode != http.StatusForbidden || e.Error.Hint == "") {
				t.Errorf("%s as %s: permission_denied with status %d, hint %q", name, who, resp.StatusCode, e.Error.Hint)
			}
		}
	}
}

// syncBuffer is a log sink the daemon's goroutines write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A refusal is logged with who was refused, their role and the route,
// and never the token the request carried.
func TestRefusalIsLogged(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	d := spacesdtest.Start(t, spacesdtest.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	c := principalClient(t, d, server.Principal{Person: "u-vera", PersonName: "vera", Role: server.RoleViewer, Grant: "g-vera", Via: server.ViaRelay})
	req, _ := http.NewRequest(http.MethodPost, "http://relay"+api.PathExec, strings.NewReader(`{"argv":["true"]}`))
	req.Header.Set("Content-Type", server.BodyJSON)
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a viewer's exec: %d", resp.StatusCode)
	}
	var line map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"permission denied"`) {
			_ = json.Unmarshal([]byte(l), &line)
		}
	}
	if line["person"] != "u-vera" || line["role"] != "viewer" || line["route"] != "POST "+api.PathExec || line["level"] != "WARN" {
		t.Fatalf("the refusal's log line: %v\nlogs:\n%s", line, logs.String())
	}
	if strings.Contains(logs.String(), d.Token) {
		t.Fatal("the token is in the logs")
	}
}
