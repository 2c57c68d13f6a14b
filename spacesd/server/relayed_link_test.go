package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

var link = server.Principal{Person: "link", Role: server.RoleLink, Grant: "g-link", Via: server.ViaRelay}

// A link's connection (RoleLink) is authorised request by request by the
// stream ticket it carries, as on the daemon's own port: a token there is
// refused (never checked), and only public routes and routes with the
// ticket's scope are reached. The owner's connection keeps ignoring what
// a request carries.
func TestRelayedLinkNeedsATicket(t *testing.T) {
	t.Parallel()
	h := newRelayedHarness(t, "link-token")
	ticket := func(scope string, ttl time.Duration) string {
		tk, err := h.auth.MintTicket(server.Ticket{Scope: scope, Target: "screen", Expires: time.Now().Add(ttl)})
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tk
	}
	good := ticket(server.TicketScopeStream, time.Minute)
	expired := ticket(server.TicketScopeStream, -time.Second)
	other := ticket("other", time.Minute)
	forged := good[:len(good)-4] + "AAAA"
	lc, oc := h.client(t, link), h.client(t, alice)
	cases := []struct {
		name string
		c    *http.Client
		path string
		auth string
		code int
		kind api.Kind
		body string
	}{
		{"ticket on a ticket route", lc, "/t/stream", good, 200, "", "ticket:screen link/link/relay"},
		{"token on a ticket route", lc, "/t/stream", "Bearer link-token", 401, api.KindUnauthenticated, ""},
		{"nothing on a ticket route", lc, "/t/stream", "", 401, api.KindUnauthenticated, ""},
		{"expired ticket", lc, "/t/stream", expired, 401, api.KindUnauthenticated, ""},
		{"forged ticket", lc, "/t/stream", forged, 401, api.KindUnauthenticated, ""},
		{"ticket of another scope", lc, "/t/stream", other, 401, api.KindUnauthenticated, ""},
		{"stream ticket on another scope's route", lc, "/t/other", good, 401, api.KindUnauthenticated, ""},
		{"ticket on a token route", lc, "/t/who", good, 401, api.KindUnauthenticated, ""},
		{"token on a token route", lc, "/t/who", "Bearer link-token", 401, api.KindUnauthenticated, ""},
		{"nothing on a public route", lc, "/t/public", "", 200, "", "token"},
		{"owner: a ticket is ignored", oc, "/t/stream", good, 200, "", "u-alice/owner/relay"},
		{"owner: no ticket needed", oc, "/t/stream", "", 200, "", "u-alice/owner/relay"},
	}
	for _, tc := range cases {
		hdr := map[string]string{}
		if tc.auth != "" {
			hdr["Authorization"] = tc.auth
		}
		code, body := do(t, tc.c, "GET", "http://relay"+tc.path, hdr, "")
		if code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.code)
			continue
		}
		if tc.kind != "" && !strings.Contains(body, `"`+string(tc.kind)+`"`) {
			t.Errorf("%s: %s, want kind %s", tc.name, body, tc.kind)
		}
		if tc.body != "" && body != tc.body {
			t.Errorf("%s: %q, want %q", tc.name, body, tc.body)
		}
	}
	// A rotation kills the link's tickets, as on the daemon's own port.
	h.auth.Rotate("link-token-2")
	if code, body := do(t, h.client(t, link), "GET", "http://relay/t/stream", map[string]string{"Authorization": good}, ""); code != 401 {
		t.Fatalf("a ticket of the rotated token through a link: %d %s", code, body)
	}
}

// A daemon without a token still wants a link's ticket: a link is anyone.
func TestRelayedLinkWithoutToken(t *testing.T) {
	t.Parallel()
	h := newRelayedHarness(t, "")
	if code, body := do(t, h.client(t, link), "GET", "http://relay/t/stream", nil, ""); code != 401 {
		t.Fatalf("a link without a ticket on a tokenless daemon: %d %s", code, body)
	}
	tk, err := h.auth.MintTicket(server.Ticket{Scope: server.TicketScopeStream, Target: "screen", Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := do(t, h.client(t, link), "GET", "http://relay/t/stream", map[string]string{"Authorization": "Bearer " + tk}, ""); code != 200 || body != "ticket:screen link/link/relay" {
		t.Fatalf("a link with its ticket on a tokenless daemon: %d %s", code, body)
	}
}
