package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/relay/store"
)

// A new cluster of three: the whole cluster stopped and started keeps
// everything; then one node stopped, the other two still read and write
// (three replicas keep a quorum).
func TestClusterRestartsAndLosesANode(t *testing.T) {
	ctx := t.Context()
	nodes := newNodes(t, "a", "b", "c")
	start := time.Now()
	startCluster(t, nodes, nodes)
	defer stopAll(nodes)
	t.Logf("three new nodes up in %s", time.Since(start).Round(time.Millisecond))
	for _, n := range nodes[1:] {
		if !n.s.GrantKey().Equal(nodes[0].s.GrantKey()) || string(n.s.TURNSecret()) != string(nodes[0].s.TURNSecret()) {
			t.Fatalf("node %s made secrets of its own", n.name)
		}
	}
	st := fill(t, nodes[1].s)
	waitFor(t, "every stream on three replicas", func() error { return replicated(ctx, nodes[0].s, 3) })

	stopAll(nodes)
	start = time.Now()
	startCluster(t, nodes, nodes)
	t.Logf("restarted in %s", time.Since(start).Round(time.Millisecond))
	for _, n := range nodes {
		if err := st.holds(ctx, n.s); err != nil {
			t.Error(err)
		}
	}

	// c dies; a and b go on, once its streams elected other leaders.
	nodes[2].s.Close()
	nodes[2].s = nil
	start = time.Now()
	for i, n := range nodes[:2] {
		name := fmt.Sprintf("user%d", i)
		waitFor(t, "a user made on "+n.name+" with c down", func() error {
			if _, err := n.s.UserByName(ctx, name); err == nil {
				return nil
			}
			_, err := n.s.CreateUser(ctx, name, "")
			return err
		})
		other := nodes[1-i].s
		waitFor(t, name+" read on the other node", func() error {
			_, err := other.UserByName(ctx, name)
			return err
		})
		waitFor(t, "an audit line written on "+n.name, func() error {
			return n.s.Audit(ctx, store.AuditEntry{Action: store.AuditAttach, Space: "pc"})
		})
	}
	for _, n := range nodes[:2] {
		waitFor(t, "everything read on "+n.name+" with c down", func() error { return st.holds(ctx, n.s) })
	}
	t.Logf("reads and writes on two nodes of three within %s", time.Since(start).Round(time.Millisecond))
}
