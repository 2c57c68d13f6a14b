package relay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// movedTo waits until the Space's session is a new one on node n, and
// checks the grant key it pinned on the first node held.
func movedTo(t *testing.T, s *space, first api.RelayStatus, n *node) api.RelayStatus {
	t.Helper()
	st := s.waitConnected(t, first.ConnectedSinceMS)
	if st.Node != n.name || st.URL != n.attachURL() {
		t.Fatalf("the Space is on %s (%s), want %s (%s)", st.Node, st.URL, n.name, n.attachURL())
	}
	if st.GrantKey != first.GrantKey {
		t.Fatalf("the pinned grant key changed across nodes: %s, then %s", first.GrantKey, st.GrantKey)
	}
	return st
}

// A node dies (every connection cut, its port closed, no go_away): the
// Space (on whichever node its URL order put it) dials the next URL, lands on the other node,
// and its owner's exec through that node works.
func TestNodeDiesSpaceMovesOn(t *testing.T) {
	ns := startNodes(t, 2)
	token := ns.user("alice")
	s, first := ns.spaceOn(t, newBridgeAt(t, ns.nodes[0].url(), ns.caFile, token))
	n1, n2 := ns.homeAndOther(t, first)
	n1.kill()
	movedTo(t, s, first, n2)
	alice2 := newBridgeAt(t, n2.url(), ns.caFile, token)
	if out := alice2.bash(t, "echo on-node-2"); out != "on-node-2\n" {
		t.Fatalf("an exec through node 2 answered %q", out)
	}
}

// A rolling restart's first step: node 1 drains while an exec is in
// flight through it. The exec is answered; the Space is on node 2 within
// the reconnect delay (plus the harness's generous bound), having left
// node 1 by itself (no session cut); node 1 refuses it meanwhile; the
// owner's exec through node 2 works.
func TestDrainMovesSpaceToAnotherNode(t *testing.T) {
	ns := startNodes(t, 2)
	token := ns.user("alice")
	s, first := ns.spaceOn(t, newBridgeAt(t, ns.nodes[0].url(), ns.caFile, token))
	// n1 is the node the Space attached to (the relay orders each
	// computer's URLs its own way), n2 the other.
	n1, n2 := ns.homeAndOther(t, first)
	alice1 := newBridgeAt(t, n1.url(), ns.caFile, token)

	// An exec in flight through node 1: it has started when its file is
	// there, and ends when the test removes the file.
	started := filepath.Join(t.TempDir(), "started")
	answered := make(chan string, 1)
	go func() {
		res, err := alice1.mcp.CallTool(t.Context(), &sdk.CallToolParams{Name: "space_bash", Arguments: map[string]any{"space": "relay:box",
			"command": "touch " + started + "; while [ -e " + started + " ]; do sleep 0.05; done; echo in-flight-done"}})
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- toolText(res)
	}()
	eventually(t, "the exec in flight", func() bool { _, err := os.Stat(started); return err == nil })

	const retryAfter = time.Second
	reports := make(chan relayapi.DrainReport, 1)
	go func() {
		rep, err := n1.admin().Drain(t.Context(), relayapi.DrainRequest{RetryAfterMS: retryAfter.Milliseconds(), GraceMS: waitTimeout.Milliseconds()})
		if err != nil {
			t.Errorf("drain: %v", err)
		}
		reports <- rep
	}()
	movedTo(t, s, first, n2)
	if st, err := n1.admin().Node(t.Context()); err != nil || !st.Draining {
		t.Fatalf("node 1's status while draining: %+v %v", st, err)
	}
	// The request in flight on node 1 is answered after the move.
	if err := os.Remove(started); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-answered:
		if !strings.Contains(out, "in-flight-done") {
			t.Fatalf("the exec in flight during the drain answered %q", out)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the exec in flight during the drain never answered")
	}
	rep := <-reports
	if rep.Sessions != 1 || rep.Left != 1 || rep.Cut != 0 {
		t.Fatalf("drain report: %+v, want the one session left by itself", rep)
	}
	alice2 := newBridgeAt(t, n2.url(), ns.caFile, token)
	if out := alice2.bash(t, "echo on-node-2"); out != "on-node-2\n" {
		t.Fatalf("an exec through node 2 answered %q", out)
	}
	if st := s.waitConnected(t, 0); st.Node != n2.name {
		t.Fatalf("the Space left node 2: %+v", st)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkRedialToAnotherNode measures the time from a node's death (or
// the start of its drain, with a reconnect delay of 100 ms) until its
// Space's session is up on the other node: what an owner's session waits
// at worst beside it. Each iteration sets up two fresh nodes.
func BenchmarkRedialToAnotherNode(b *testing.B) {
	for _, how := range []string{"node-dies", "drain-100ms"} {
		b.Run(how, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				b.StopTimer()
				ns := startNodes(b, 2)
				alice := newBridgeAt(b, ns.nodes[0].url(), ns.caFile, ns.user("alice"))
				s, first := ns.spaceOn(b, alice)
				home, other := ns.homeAndOther(b, first)
				b.StartTimer()
				start := time.Now()
				if how == "node-dies" {
					home.kill()
				} else {
					go func() {
						_, _ = home.admin().Drain(context.Background(), relayapi.DrainRequest{RetryAfterMS: 100, GraceMS: 5000})
					}()
				}
				for {
					st, err := s.d.RelayStatus(context.Background())
					if err == nil && st.Connected && st.ConnectedSinceMS > first.ConnectedSinceMS && st.Node == other.name {
						break
					}
					if time.Since(start) > waitTimeout {
						b.Fatalf("the Space never reached node 2: %+v %v", st, err)
					}
					time.Sleep(2 * time.Millisecond)
				}
				total += time.Since(start)
			}
			b.ReportMetric(ms(total/time.Duration(b.N)), "redial-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
