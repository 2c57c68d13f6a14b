package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// TestTickets: a ticket verifies with its claims until it expires; a
// changed byte, an old token's key, and the same token put back after a
// rotation all refuse it, each as unauthenticated.
func TestTickets(t *testing.T) {
	now := time.Now()
	a := server.NewAuth("first-token", nil)
	claims := server.Ticket{Scope: server.TicketScopeStream, Target: "window:42", ViewOnly: true, Expires: now.Add(time.Minute)}
	tk, err := a.MintTicket(claims)
	if err != nil {
		t.Fatal(err)
	}
	if !server.IsTicket(tk) || strings.Contains(tk, "first-token") {
		t.Fatalf("ticket %q", tk)
	}
	got, err := a.VerifyTicket(tk, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Scope != claims.Scope || got.Target != claims.Target || !got.ViewOnly || got.Expires.Unix() != claims.Expires.Unix() {
		t.Fatalf("claims %+v, want %+v", got, claims)
	}
	// Each mint draws an ID, unless it is given (a renewal keeps its ticket's).
	idOf := func(c server.Ticket) string {
		t.Helper()
		tk, err := a.MintTicket(c)
		if err != nil {
			t.Fatal(err)
		}
		v, err := a.VerifyTicket(tk, now)
		if err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	if second := idOf(claims); got.ID == "" || second == got.ID {
		t.Fatalf("IDs %q and %q: want two different ones", got.ID, second)
	}
	renewal := claims
	renewal.ID = got.ID
	if id := idOf(renewal); id != got.ID {
		t.Fatalf("a ticket minted with the ID %q carries %q", got.ID, id)
	}
	refused := func(what, ticket string, at time.Time) {
		t.Helper()
		if _, err := a.VerifyTicket(ticket, at); api.KindOf(err) != api.KindUnauthenticated {
			t.Errorf("%s: %v, want unauthenticated", what, err)
		}
	}
	refused("expired", tk, now.Add(time.Minute))
	// Flip a byte of the payload, then one of the signature.
	mid := len("cuat1.") + 3
	refused("payload changed", tk[:mid]+string(tk[mid]^1)+tk[mid+1:], now)
	refused("signature changed", tk[:len(tk)-2]+string(tk[len(tk)-2]^1)+tk[len(tk)-1:], now)
	refused("not a ticket", "cuat1.nonsense", now)
	refused("too long", "cuat1."+strings.Repeat("a", 2000)+".b", now)
	other := server.NewAuth("other-token", nil)
	if _, err := other.VerifyTicket(tk, now); err == nil {
		t.Error("a ticket verified under another token")
	}
	a.Rotate("second-token")
	refused("after a rotation", tk, now)
	a.Rotate("first-token") // the same token back: its old tickets stay dead
	refused("the old token put back", tk, now)
	fresh, err := a.MintTicket(claims)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.VerifyTicket(fresh, now); err != nil {
		t.Errorf("a ticket minted after the rotations: %v", err)
	}
}

// TestTicketsOutliveARestart: a daemon restarted on the same token file
// (a new Auth reading it) accepts the tickets the old one minted, also
// those minted after a rotation; a rotation through the file still kills
// them, and so does putting the old token back, across a restart too.
func TestTicketsOutliveARestart(t *testing.T) {
	now := time.Now()
	file := filepath.Join(t.TempDir(), "token")
	write := func(tok string) {
		t.Helper()
		// As secret managers do: write aside, rename over.
		if err := os.WriteFile(file+".new", []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".new", file); err != nil {
			t.Fatal(err)
		}
	}
	restart := func() *server.Auth {
		t.Helper()
		a, err := server.NewFileAuth(file, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	claims := server.Ticket{Scope: server.TicketScopeStream, Target: "screen", Expires: now.Add(time.Minute)}
	mint := func(a *server.Auth) string {
		t.Helper()
		tk, err := a.MintTicket(claims)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	verify := func(what string, a *server.Auth, tk string, want bool) {
		t.Helper()
		_, err := a.VerifyTicket(tk, now)
		if want && err != nil {
			t.Errorf("%s: refused: %v", what, err)
		}
		if !want && api.KindOf(err) != api.KindUnauthenticated {
			t.Errorf("%s: %v, want unauthenticated", what, err)
		}
	}

	write("first-token")
	a := restart()
	first := mint(a)
	verify("a ticket after a restart", restart(), first, true)

	write("second-token")
	a.Reload()
	verify("a ticket of the token rotated away", a, first, false)
	second := mint(a)
	verify("a ticket minted after a rotation, after a restart", restart(), second, true)

	write("first-token") // the first token put back
	a.Reload()
	verify("a ticket of the token put back", a, first, false)
	verify("a ticket of the token put back, after a restart", restart(), first, false)
	verify("a ticket of the token rotated away, after a restart", restart(), second, false)
	verify("a fresh ticket, after a restart", restart(), mint(a), true)
}

// A person's ticket carries their name, cut to MaxTicketPersonName on a
// rune boundary: the longest name a grant holds, of the characters JSON
// escapes most, still makes a ticket VerifyTicket reads.
func TestTicketPersonName(t *testing.T) {
	now := time.Now()
	a := server.NewAuth("the-token", nil)
	for _, tc := range []struct{ name, want string }{
		{"alice", "alice"},
		{strings.Repeat("<", 128), strings.Repeat("<", server.MaxTicketPersonName)},
		{"a" + strings.Repeat("\u2028", 60), "a" + strings.Repeat("\u2028", (server.MaxTicketPersonName-1)/3)},
	} {
		tk, err := a.MintTicket(server.Ticket{Scope: server.TicketScopeStream, Target: "window:4294967295", ViewOnly: true, Expires: now.Add(time.Minute),
			Person: "u_" + strings.Repeat("x", 126), Role: server.RoleViewer, PersonName: tc.name})
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.VerifyTicket(tk, now)
		if err != nil {
			t.Fatalf("a ticket of %d bytes for the name %.20q: %v", len(tk), tc.name, err)
		}
		if got.PersonName != tc.want {
			t.Errorf("name %.20q came back %.20q, want %.20q", tc.name, got.PersonName, tc.want)
		}
	}
}
