package store_test

import (
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// A share's role: the user's own or their team's, the stronger of both;
// gone with the computer, and kept across a restart.
func TestSharesAndTeams(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	ctx := t.Context()
	ann, _ := s.CreateUser(ctx, "ann", "")
	bob, _ := s.CreateUser(ctx, "bob", "Bob@Example.org")
	if _, err := s.CreateTeam(ctx, "red"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"ann", "bob"} {
		if _, err := s.AddTeamMember(ctx, "red", u); err != nil {
			t.Fatal(err)
		}
	}
	if u, err := s.UserByEmail(ctx, "bob@example.ORG"); err != nil || u.ID != bob.ID {
		t.Fatalf("by email: %+v %v", u, err)
	}
	if _, _, _, err := s.PutComputer(ctx, ann.ID, "pc"); err != nil {
		t.Fatal(err)
	}
	role := func() protocol.Role {
		t.Helper()
		r, err := s.RoleOf(ctx, "pc", bob.ID)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if role() != "" {
		t.Fatal("a role before any share")
	}
	if prev, err := s.PutShare(ctx, "pc", "team:red", protocol.RoleViewer); err != nil || prev != "" {
		t.Fatalf("share: %q %v", prev, err)
	}
	if role() != protocol.RoleViewer {
		t.Fatalf("through the team: %q", role())
	}
	if _, err := s.PutShare(ctx, "pc", bob.ID, protocol.RoleEditor); err != nil {
		t.Fatal(err)
	}
	if role() != protocol.RoleEditor {
		t.Fatalf("own editor beside the team's viewer: %q", role())
	}
	if prev, _ := s.PutShare(ctx, "pc", bob.ID, protocol.RoleViewer); prev != protocol.RoleEditor {
		t.Fatalf("a new role answers the old: %q", prev)
	}
	if m, err := s.SharedWith(ctx, bob.ID); err != nil || m["pc"] != protocol.RoleViewer || len(m) != 1 {
		t.Fatalf("shared with bob: %v %v", m, err)
	}
	s.Close()
	s = open(t, dir)
	defer s.Close()
	if role() != protocol.RoleViewer {
		t.Fatalf("after a restart: %q", role())
	}
	if gone, err := s.DeleteShares(ctx, "pc", ""); err != nil || len(gone) != 2 {
		t.Fatalf("unshare all: %v %v", gone, err)
	}
	if role() != "" {
		t.Fatalf("after unshare all: %q", role())
	}
	if _, err := s.PutShare(ctx, "pc", bob.ID, protocol.RoleViewer); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteComputer(ctx, "pc"); err != nil {
		t.Fatal(err)
	}
	if sh, err := s.Shares(ctx, "pc"); err != nil || len(sh) != 0 {
		t.Fatalf("shares of a removed computer: %v %v", sh, err)
	}
	// A removed user leaves their team.
	if _, err := s.DeleteUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if team, err := s.TeamOf(ctx, bob.ID); err != nil || team != "" {
		t.Fatalf("removed user's team: %q %v", team, err)
	}
	if ts, _ := s.Teams(ctx); len(ts) != 1 || len(ts[0].Members) != 1 || ts[0].Members[0] != "ann" {
		t.Fatalf("teams: %+v", ts)
	}
	if _, err := s.RemoveTeamMember(ctx, "red", "ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveTeamMember(ctx, "red", "ann"); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("remove twice: %v", err)
	}
}
