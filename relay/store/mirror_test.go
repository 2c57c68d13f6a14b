package store_test

import (
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// The mirrors the relayed requests read: a token or a computer just made
// is found at once; a removed user's token and a removed computer are
// refused as soon as the watch delivers the removal; a computer token
// that a rotation just made opens its computer at once, every time (the
// attach reads the buckets, not the mirrors).
func TestMirrorsFollowTheBuckets(t *testing.T) {
	ctx := t.Context()
	s := open(t, t.TempDir())
	defer s.Close()
	u, err := s.CreateUser(ctx, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	_, utok, err := s.CreateUserToken(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.UserByToken(ctx, utok); err != nil || got.ID != u.ID {
		t.Fatalf("a token just made: %+v, %v", got, err)
	}
	for i := range 50 {
		_, ctok, _, err := s.PutComputer(ctx, u.ID, "box")
		if err != nil {
			t.Fatal(err)
		}
		if c, err := s.ComputerByToken(ctx, ctok); err != nil || c.Name != "box" {
			t.Fatalf("rotation %d: the new token at once: %+v, %v", i, c, err)
		}
	}
	if err := s.DeleteComputer(ctx, "box"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removed computer is gone", func() bool {
		_, err := s.Computer(ctx, "box")
		return api.KindOf(err) == api.KindNotFound
	})
	if _, err := s.DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removed user's token is refused", func() bool {
		_, err := s.UserByToken(ctx, utok)
		return api.KindOf(err) == api.KindUnauthenticated && reason(err) == protocol.CloseTokenRevoked.String()
	})
}

// eventually waits for cond: a bound for a loaded machine, not a figure.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
