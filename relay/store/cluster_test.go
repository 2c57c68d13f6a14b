package store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/store"
)

// meshKey is the test clusters' mesh key.
var meshKey = []byte("0123456789abcdef0123456789abcdef")

// node is one node of a test cluster: its data dir outlives its stores.
type node struct {
	name, dir string
	s         *store.Store
}

// freePorts answers n ports that were free a moment ago on 127.0.0.1
// (route listeners need their ports before they start: the others dial
// them). A port taken meanwhile makes startCluster try again.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

func newNodes(t *testing.T, names ...string) []*node {
	var ns []*node
	for _, n := range names {
		ns = append(ns, &node{name: n, dir: t.TempDir()})
	}
	return ns
}

// startCluster opens every node of nodes as one cluster, at once (each
// Open waits for a quorum), on fresh ports. It tries again on a port
// collision.
func startCluster(t *testing.T, nodes []*node) { startClusterFrom(t, nodes, false) }

// startClusterFrom is startCluster; with oldFirst, the first node is
// started before the others, as operations.md has a single node that
// grows into a cluster started (its route port up, so its "importing"
// answer reaches the new nodes).
func startClusterFrom(t *testing.T, nodes []*node, oldFirst bool) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		ports := freePorts(t, len(nodes))
		errs := make([]error, len(nodes))
		firstDone := make(chan struct{})
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.s, errs[i] = openNode(t, n, nodes, ports)
				if i == 0 {
					close(firstDone)
				}
			}()
			if i == 0 && oldFirst {
				waitFor(t, "the first node's route port", func() error {
					select {
					case <-firstDone: // it failed (or, alone, cannot have started)
						return nil
					default:
					}
					c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0]))
					if err == nil {
						c.Close()
					}
					return err
				})
			}
		}
		wg.Wait()
		err := errors.Join(errs...)
		if err == nil {
			return
		}
		stopAll(nodes)
		// Only a route port taken since freePorts (another test's) is
		// this harness's to mend; the store's own failures are the test's.
		if attempt < 3 && errors.Is(err, syscall.EADDRINUSE) {
			t.Logf("a route port was taken meanwhile (try %d): %v", attempt+1, err)
			continue
		}
		t.Fatal(err)
	}
}

func openNode(t *testing.T, n *node, all []*node, ports []int) (*store.Store, error) {
	c := &store.ClusterOptions{Name: "relays", Key: meshKey}
	for i, m := range all {
		if m == n {
			c.Listen = fmt.Sprintf("127.0.0.1:%d", ports[i])
		} else {
			c.Routes = append(c.Routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
		}
	}
	// The store bounds its own setup (2 min from the quorum on); this
	// bounds the quorum's wait too.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var log *slog.Logger
	if os.Getenv("RELAY_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_node", n.name)
	}
	return store.Open(ctx, n.dir, log, store.Options{Node: n.name, Cluster: c})
}

func stopAll(nodes []*node) {
	for _, n := range nodes {
		if n.s != nil {
			n.s.Close()
			n.s = nil
		}
	}
}

// waitFor polls cond until it holds: a bound for a loaded machine (and a
// raft election or two), not a figure.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replicated checks that every stream has want replicas, all current.
func replicated(ctx context.Context, s *store.Store, want int) error {
	st, err := s.Status(ctx)
	if err != nil {
		return err
	}
	for _, ss := range st.Streams {
		current := 0
		for _, p := range ss.Peers {
			if p.Current && !p.Offline {
				current++
			}
		}
		if ss.Replicas != want || ss.Leader == "" || current != want-1 {
			return fmt.Errorf("stream %s: %d replicas, leader %q, %d current peers", ss.Name, ss.Replicas, ss.Leader, current)
		}
	}
	return nil
}

func TestClusterOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		c    store.ClusterOptions
	}{
		{"no name", store.ClusterOptions{Listen: "127.0.0.1:4248", Key: meshKey}},
		{"short key", store.ClusterOptions{Name: "r", Listen: "127.0.0.1:4248", Key: []byte("short")}},
		{"no port", store.ClusterOptions{Name: "r", Listen: "127.0.0.1", Key: meshKey}},
		{"route with a password", store.ClusterOptions{Name: "r", Listen: "127.0.0.1:4248", Key: meshKey, Routes: []string{"nats://u:p@127.0.0.1:4249"}}},
		{"route not nats", store.ClusterOptions{Name: "r", Listen: "127.0.0.1:4248", Key: meshKey, Routes: []string{"http://127.0.0.1:4249"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := store.Open(t.Context(), t.TempDir(), nil, store.Options{Node: "a", Cluster: &c.c})
			if api.KindOf(err) != api.KindInvalidArgument {
				t.Fatalf("%v, want invalid_argument", err)
			}
		})
	}
}
