package store_test

import (
	"testing"
)

// Three new nodes started at once (systemd starting them together on a
// busy machine) come up as one cluster with one grant key and one TURN
// secret, or fail with an error of their own: never with two keys.
func TestClusterStartsAtOnce(t *testing.T) {
	nodes := newNodes(t, "a", "b", "c")
	startCluster(t, nodes)
	defer stopAll(nodes)
	for _, n := range nodes[1:] {
		if !n.s.GrantKey().Equal(nodes[0].s.GrantKey()) || string(n.s.TURNSecret()) != string(nodes[0].s.TURNSecret()) {
			t.Fatalf("node %s holds other secrets than a", n.name)
		}
	}
}
