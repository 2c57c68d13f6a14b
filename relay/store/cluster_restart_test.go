package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
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

	// A backup, taken from a running node, is a single node's data: a
	// relay opened on it holds everything (and grows into a new cluster as
	// TestClusterGrowsFromOneNode's does).
	restored := t.TempDir()
	res, err := nodes[1].s.Backup(ctx, filepath.Join(restored, store.JetStreamDir))
	if err != nil || res.AuditLines != 2 || res.Keys < 10 {
		t.Fatalf("backup: %+v %v", res, err)
	}
	if _, err := nodes[1].s.Backup(ctx, filepath.Join(restored, store.JetStreamDir)); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("a backup over a backup: %v", err)
	}
	single, err := store.Open(ctx, restored, nil, store.Options{Node: "restored"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.holds(ctx, single); err != nil {
		t.Errorf("restored from the backup: %v", err)
	}
	single.Close()

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
	// The mirrors still follow the other node's writes: bob removed on a
	// is refused on b.
	start = time.Now()
	if _, err := nodes[0].s.DeleteUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob's token refused on b with c down", func() error {
		if _, err := nodes[1].s.UserByToken(ctx, st.bobTok); api.KindOf(err) != api.KindUnauthenticated {
			return fmt.Errorf("bob's token on b: %v", err)
		}
		return nil
	})
	t.Logf("a removal on a reached b's mirror in %s", time.Since(start).Round(time.Millisecond))
}

// Nothing joins without the mesh key; and a single node's data is not
// brought into a cluster that made other secrets first (its new nodes
// started before it): that node refuses to start, and keeps its data.
func TestClusterRefusesStrangersAndAConflictingImport(t *testing.T) {
	ctx := t.Context()
	nodes := newNodes(t, "a", "b", "c")
	single, err := store.Open(ctx, nodes[0].dir, nil, store.Options{Node: "a"})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, single)
	single.Close()

	// b and c, configured for a too, have a quorum of their own.
	ports := freePorts(t, 3)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, n := range nodes[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.s, errs[i+1] = openNode(t, n, nodes, ports)
		}()
	}
	wg.Wait()
	defer stopAll(nodes)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	// A stranger with another key routes to b: refused, it never has a
	// quorum, and b never counts it.
	stranger := &node{name: "x", dir: t.TempDir()}
	sctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	xport := freePorts(t, 1)[0]
	_, err = store.Open(sctx, stranger.dir, nil, store.Options{Node: "x", Cluster: &store.ClusterOptions{
		Name: "relays", Key: []byte("another key, long enough to pass"), Listen: fmt.Sprintf("127.0.0.1:%d", xport),
		Routes: []string{fmt.Sprintf("nats://127.0.0.1:%d", ports[1])},
	}})
	if err == nil || !strings.Contains(err.Error(), "quorum") {
		t.Fatalf("a node with another mesh key: %v, want no quorum", err)
	}
	if st, err := nodes[1].s.Status(ctx); err != nil || len(st.Nodes) != 2 {
		t.Fatalf("b's nodes after the stranger: %+v %v", st.Nodes, err)
	}

	// a comes last with its single node's data: refused, data kept.
	_, err = openNode(t, nodes[0], nodes, ports)
	if api.KindOf(err) != api.KindPreconditionFailed {
		t.Fatalf("a joining a cluster with other secrets: %v, want precondition_failed", err)
	}
	if _, err := os.Stat(filepath.Join(nodes[0].dir, store.SingleDir)); err != nil {
		t.Fatalf("a's single node's data: %v", err)
	}

	// c stops: b alone is left without a quorum; its status still
	// answers, within its budget, each stream with its leader or why it
	// did not answer (nats-server takes seconds to notice the lost
	// quorum: the metadata leader is not asserted gone here).
	nodes[2].s.Close()
	nodes[2].s = nil
	if st, err := nodes[1].s.Status(ctx); err != nil || len(st.Streams) != 10 {
		t.Fatalf("b's status, alone: %+v %v", st, err)
	}
}
