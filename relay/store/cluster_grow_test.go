package store_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/store"
)

// relayState is what a relay in use holds: what a cluster must keep.
type relayState struct {
	annID, bobID   string
	annTok, bobTok string
	pcTok          string
	grantKey       ed25519.PrivateKey
	turnSecret     []byte
}

// fill makes users with tokens, a team, a computer, a share and audit lines.
func fill(t *testing.T, s *store.Store) relayState {
	t.Helper()
	ctx := t.Context()
	var st relayState
	ann, err := s.CreateUser(ctx, "ann", "")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.CreateUser(ctx, "bob", "bob@example.org")
	if err != nil {
		t.Fatal(err)
	}
	st.annID, st.bobID = ann.ID, bob.ID
	if _, st.annTok, err = s.CreateUserToken(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, st.bobTok, err = s.CreateUserToken(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTeam(ctx, "red"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddTeamMember(ctx, "red", "ann"); err != nil {
		t.Fatal(err)
	}
	if _, st.pcTok, _, err = s.PutComputer(ctx, ann.ID, "pc"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutShare(ctx, "pc", bob.ID, protocol.RoleViewer); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{store.AuditRegister, store.AuditShare} {
		if err := s.Audit(ctx, store.AuditEntry{Action: a, Space: "pc"}); err != nil {
			t.Fatal(err)
		}
	}
	st.grantKey, st.turnSecret = s.GrantKey(), bytes.Clone(s.TURNSecret())
	return st
}

// holds checks that s has everything fill made.
func (st relayState) holds(ctx context.Context, s *store.Store) error {
	if !st.grantKey.Equal(s.GrantKey()) {
		return fmt.Errorf("node %s: another grant key (Spaces pinned the first)", s.Node())
	}
	if !bytes.Equal(st.turnSecret, s.TURNSecret()) {
		return fmt.Errorf("node %s: another TURN secret", s.Node())
	}
	if u, err := s.UserByToken(ctx, st.annTok); err != nil || u.ID != st.annID {
		return fmt.Errorf("node %s: ann's token: %+v %v", s.Node(), u, err)
	}
	if u, err := s.UserByEmail(ctx, "bob@example.org"); err != nil || u.ID != st.bobID {
		return fmt.Errorf("node %s: bob by email: %+v %v", s.Node(), u, err)
	}
	if c, err := s.ComputerByToken(ctx, st.pcTok); err != nil || c.Name != "pc" || c.Owner != st.annID {
		return fmt.Errorf("node %s: pc's token: %+v %v", s.Node(), c, err)
	}
	if r, err := s.RoleOf(ctx, "pc", st.bobID); err != nil || r != protocol.RoleViewer {
		return fmt.Errorf("node %s: bob's role on pc: %q %v", s.Node(), r, err)
	}
	if team, err := s.TeamOf(ctx, st.annID); err != nil || team != "red" {
		return fmt.Errorf("node %s: ann's team: %q %v", s.Node(), team, err)
	}
	a, err := s.AuditEntries(ctx, 10)
	if err != nil || len(a) < 2 || a[0].Action != store.AuditRegister || a[1].Action != store.AuditShare {
		return fmt.Errorf("node %s: audit: %+v %v", s.Node(), a, err)
	}
	return nil
}

// A single node's relay, restarted as the first node of a cluster that two
// empty nodes join: everything it held is on every node, with the same
// grant key and TURN secret, replicated three times; and a removal on
// one node reaches another's mirrors.
func TestClusterGrowsFromOneNode(t *testing.T) {
	ctx := t.Context()
	nodes := newNodes(t, "a", "b", "c")
	single, err := store.Open(ctx, nodes[0].dir, nil, store.Options{Node: "a"})
	if err != nil {
		t.Fatal(err)
	}
	st := fill(t, single)
	single.Close()

	start := time.Now()
	startCluster(t, nodes, nodes)
	defer stopAll(nodes)
	t.Logf("three nodes up, a's data imported, in %s", time.Since(start).Round(time.Millisecond))
	for _, n := range nodes {
		if err := st.holds(ctx, n.s); err != nil {
			t.Error(err)
		}
	}
	if a, _ := nodes[1].s.AuditEntries(ctx, 10); len(a) != 2 {
		t.Errorf("audit on b: %d lines, want the 2 imported once", len(a))
	}
	if kept, _ := filepath.Glob(filepath.Join(nodes[0].dir, store.SingleDir+".imported-*")); len(kept) != 1 {
		t.Errorf("the single node's data: %v, want it kept once as imported", kept)
	}
	waitFor(t, "every stream on three replicas", func() error { return replicated(ctx, nodes[0].s, 3) })
	t.Logf("replicated three times after %s", time.Since(start).Round(time.Millisecond))

	// Mirrors across nodes: bob removed on a is refused on c.
	if _, err := nodes[2].s.UserByToken(ctx, st.bobTok); err != nil {
		t.Fatalf("bob on c before: %v", err)
	}
	if _, err := nodes[0].s.DeleteUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob's token refused on c", func() error {
		_, err := nodes[2].s.UserByToken(ctx, st.bobTok)
		if api.KindOf(err) == api.KindUnauthenticated {
			return nil
		}
		return fmt.Errorf("bob's token on c: %v", err)
	})
	// And a computer made on b opens on a.
	_, tok, _, err := nodes[1].s.PutComputer(ctx, st.annID, "pc2")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := nodes[0].s.ComputerByToken(ctx, tok); err != nil || c.Name != "pc2" {
		t.Fatalf("pc2 made on b, on a: %+v %v", c, err)
	}
}
