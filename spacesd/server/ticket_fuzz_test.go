package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/spacesd/server"
)

// FuzzVerifyTicket: whatever a bearer presents, verifying it neither
// panics nor accepts anything but a ticket this Auth signed: the person
// and role read from one are among those minted, with an issue time.
func FuzzVerifyTicket(f *testing.F) {
	auth := server.NewAuth("fuzz-token", slogDiscard())
	exp := time.Now().Add(time.Hour)
	// Each fuzz worker mints its own seeds (fresh IDs) under the same
	// key: a ticket is told by its claims, not by its bytes.
	roles := map[string]server.Role{"": "", "u-bob": server.RoleViewer, "u-eda": server.RoleEditor}
	for _, t := range []server.Ticket{
		{Scope: server.TicketScopeStream, Target: "screen", Expires: exp},
		{Scope: server.TicketScopeStream, Target: "window:7", ViewOnly: true, Expires: exp, Person: "u-bob", Role: server.RoleViewer},
		{Scope: "other", Target: "screen", Expires: exp, Person: "u-eda", Role: server.RoleEditor},
	} {
		tk, err := auth.MintTicket(t)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tk)
		f.Add(tk[:len(tk)-3])
		f.Add(strings.Replace(tk, ".", "..", 1))
	}
	f.Add("cuat1.")
	f.Add("cuat1.e30.")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := auth.VerifyTicket(s, time.Now())
		if err != nil {
			return
		}
		if role, ok := roles[got.Person]; !ok || got.Role != role || !strings.HasPrefix(s, "cuat1.") {
			t.Fatalf("accepted %q as %+v, which was never minted", s, got)
		}
		if got.Person != "" && got.Issued.IsZero() {
			t.Fatalf("a person's ticket without its issue time: %+v", got)
		}
	})
}
