package store_test

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, dir string) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), dir, nil, store.Options{Node: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func reason(err error) string {
	if err == nil {
		return ""
	}
	return api.AsError(err).Reason
}

// Users, tokens, computers and the grant key survive a restart on the same
// data dir; a rotated or removed computer's token says why it is refused.
func TestStoreSurvivesRestart(t *testing.T) {
	ctx, dir := t.Context(), t.TempDir()
	s := open(t, dir)
	u, err := s.CreateUser(ctx, "alice", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, "alice", ""); reason(err) != "exists" {
		t.Fatalf("a second alice: %v, want reason exists", err)
	}
	_, utok, err := s.CreateUserToken(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	c, ctok, rotated, err := s.PutComputer(ctx, u.ID, "box1")
	if err != nil || rotated || c.Owner != u.ID {
		t.Fatalf("PutComputer: %+v %v %v", c, rotated, err)
	}
	key := s.GrantKey()
	turnSecret := bytes.Clone(s.TURNSecret())
	if len(turnSecret) != store.TURNSecretLen || bytes.Equal(turnSecret, make([]byte, store.TURNSecretLen)) {
		t.Fatalf("TURN secret %x", turnSecret)
	}
	if err := s.Audit(ctx, store.AuditEntry{Action: store.AuditRegister, Space: "box1"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, dir)
	defer s.Close()
	if !bytes.Equal(turnSecret, s.TURNSecret()) {
		t.Fatal("the TURN secret changed over a restart: the credentials it minted would fail")
	}
	if !key.Equal(s.GrantKey()) {
		t.Fatal("the grant key changed across a restart")
	}
	got, err := s.UserByToken(ctx, utok)
	if err != nil || got.ID != u.ID {
		t.Fatalf("UserByToken after restart: %+v, %v", got, err)
	}
	if c, err := s.ComputerByToken(ctx, ctok); err != nil || c.Name != "box1" {
		t.Fatalf("ComputerByToken after restart: %+v, %v", c, err)
	}
	if a, err := s.AuditEntries(ctx, 10); err != nil || len(a) != 1 || a[0].Action != store.AuditRegister {
		t.Fatalf("audit after restart: %+v, %v", a, err)
	}

	// Rotation: the old token says token_rotated, the new one works.
	_, ctok2, rotated, err := s.PutComputer(ctx, u.ID, "box1")
	if err != nil || !rotated {
		t.Fatalf("rotate: %v %v", rotated, err)
	}
	if _, err := s.ComputerByToken(ctx, ctok); reason(err) != "token_rotated" {
		t.Fatalf("old token: %v, want token_rotated", err)
	}
	if _, err := s.ComputerByToken(ctx, ctok2); err != nil {
		t.Fatal(err)
	}
	// Another user may not take the name.
	bob, _ := s.CreateUser(ctx, "bob", "")
	if _, _, _, err := s.PutComputer(ctx, bob.ID, "box1"); reason(err) != "exists" {
		t.Fatalf("bob takes box1: %v", err)
	}
	// A fresh, well-formed token nobody issued.
	stranger, _ := protocol.NewToken(protocol.TokenComputer)
	if _, err := s.ComputerByToken(ctx, stranger); reason(err) != "token_invalid" {
		t.Fatalf("unknown token: %v", err)
	}
	if _, err := s.ComputerByToken(ctx, utok); reason(err) != "token_invalid" {
		t.Fatalf("a user token as a computer token: %v", err)
	}
	if err := s.DeleteComputer(ctx, "box1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ComputerByToken(ctx, ctok2); reason(err) != "token_revoked" {
		t.Fatalf("removed computer's token: %v", err)
	}

	// Removing a user removes their tokens and computers.
	if _, _, _, err := s.PutComputer(ctx, u.ID, "box2"); err != nil {
		t.Fatal(err)
	}
	gone, err := s.DeleteUser(ctx, "alice")
	if err != nil || len(gone) != 1 || gone[0] != "box2" {
		t.Fatalf("DeleteUser: %v %v", gone, err)
	}
	if _, err := s.UserByToken(ctx, utok); reason(err) != "token_revoked" {
		t.Fatalf("removed user's token: %v", err)
	}
	if _, err := s.Computer(ctx, "box2"); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("removed user's computer: %v", err)
	}
	users, err := s.Users(ctx)
	if err != nil || len(users) != 1 || users[0].Name != "bob" {
		t.Fatalf("Users: %+v %v", users, err)
	}
}

func TestStoreRefusesBadNames(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	for _, n := range []string{"", "-x", "a b", "a/b", "a*", string(make([]byte, 65))} {
		if _, err := s.CreateUser(ctx, n, ""); api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("user %q: %v", n, err)
		}
	}
	if _, err := s.CreateUser(ctx, "ok", "not an email"); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("bad email: %v", err)
	}
}
