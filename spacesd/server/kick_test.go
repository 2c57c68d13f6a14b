package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/spacesd/server"
)

// A kick ends what its persons hold (Host.Hold) and refuses the tickets
// they minted before it, on a link's connection as on the daemon's own
// port; a ticket minted after, another person's, and the token's live
// on. A match on role (the relay's KickAll: every non-owner) spares the
// owner's.
func TestKickEndsHeldSessionsAndTickets(t *testing.T) {
	t.Parallel()
	h := newRelayedHarness(t, "kick-token")
	mint := func(person string, role server.Role) string {
		tk, err := h.auth.MintTicket(server.Ticket{Scope: server.TicketScopeStream, Target: "screen", Expires: time.Now().Add(time.Minute), Person: person, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tk
	}
	hold := func(p server.Principal) context.Context {
		ctx, end := h.host.Hold(context.Background(), server.Caller{Generation: h.auth.Generation(), Principal: &p})
		t.Cleanup(func() { end(nil) })
		return ctx
	}
	bob := server.Principal{Person: "u-bob", Role: server.RoleViewer, Via: server.ViaRelay}
	carol := server.Principal{Person: "u-carol", Role: server.RoleEditor, Via: server.ViaRelay}
	bobs, carols, owners := hold(bob), hold(carol), hold(alice)
	bobTicket, carolTicket, ownerTicket := mint("u-bob", server.RoleViewer), mint("u-carol", server.RoleEditor), mint("u-alice", server.RoleOwner)
	tokenTicket := mint("", "")
	lc := h.client(t, link)
	status := func(ticket string) (int, int) {
		onLink, _ := do(t, lc, "GET", "http://relay/t/stream", map[string]string{"Authorization": ticket}, "")
		direct, _ := do(t, http.DefaultClient, "GET", h.url()+"/t/stream", map[string]string{"Authorization": ticket}, "")
		return onLink, direct
	}
	if a, b := status(bobTicket); a != 200 || b != 200 {
		t.Fatalf("bob's ticket before the kick: %d, %d", a, b)
	}

	if n := h.host.Kick(func(p string, _ server.Role) bool { return p == "u-bob" }); n != 1 {
		t.Fatalf("the kick ended %d held sessions, want 1", n)
	}
	if !errors.Is(context.Cause(bobs), server.ErrKicked) {
		t.Fatalf("bob's held session: %v", context.Cause(bobs))
	}
	if carols.Err() != nil {
		t.Fatal("carol's held session ended with bob's kick")
	}
	if a, b := status(bobTicket); a != 403 || b != 403 {
		t.Errorf("bob's ticket after his kick: %d on a link, %d on the port; want 403", a, b)
	}
	for name, tk := range map[string]string{"carol's": carolTicket, "the token's": tokenTicket, "bob's minted after": mint("u-bob", server.RoleViewer)} {
		if a, b := status(tk); a != 200 || b != 200 {
			t.Errorf("%s ticket after bob's kick: %d, %d", name, a, b)
		}
	}

	h.host.Kick(func(_ string, role server.Role) bool { return role != server.RoleOwner })
	if carols.Err() == nil || owners.Err() != nil {
		t.Errorf("a kick of every non-owner: carol's ended %v, the owner's %v", carols.Err() != nil, owners.Err() != nil)
	}
	if a, b := status(carolTicket); a != 403 || b != 403 {
		t.Errorf("carol's ticket after every non-owner's kick: %d, %d", a, b)
	}
	if a, b := status(ownerTicket); a != 200 || b != 200 {
		t.Errorf("the owner's ticket after every non-owner's kick: %d, %d", a, b)
	}
}
