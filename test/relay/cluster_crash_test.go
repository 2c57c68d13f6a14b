package relay_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/store"
)

// crashBound is how long the two nodes left may take to serve again after
// the third's crash: a bound for a loaded machine, not a figure (the test
// logs the figures).
const crashBound = 60 * time.Second

// tryBound bounds one try of a read or write after the crash: a request
// to a stream whose leader was b gets no answer until a new leader is
// elected (the store's own bound is 10 s), so the figures come from short
// tries.
const tryBound = 2 * time.Second

// clusterProcess is one node of a cluster of processes.
type clusterProcess struct {
	name, addr, dataDir string
	p                   *relayProcess
}

func (n *clusterProcess) admin() *relayd.AdminClient { return relayd.NewAdminClient(n.dataDir) }
func (n *clusterProcess) url() string                { return "https://" + n.addr }

// freeAddrs answers n addresses on 127.0.0.1 that were free a moment ago.
func freeAddrs(t testing.TB, n int) []string {
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close()
	}
	return addrs
}

// startClusterProcesses starts a cluster of three relay processes on
// loopback, at once, each handing Spaces every node's URL in urlOrder's
// order (node names).
func startClusterProcesses(t *testing.T, urlOrder []string) ([]*clusterProcess, string) {
	t.Helper()
	ca := tlstest.NewCA(t)
	caFile := ca.WriteCA(t, t.TempDir())
	certFile, keyFile := tlstest.WritePair(t, t.TempDir(), ca.Issue(t, "127.0.0.1", "localhost"))
	names := []string{"a", "b", "c"}
	https, routes := freeAddrs(t, 3), freeAddrs(t, 3)
	var urls []string
	for _, name := range urlOrder {
		urls = append(urls, "wss://"+https[slices.Index(names, name)])
	}
	var nodes []*clusterProcess
	var readies []<-chan bool
	for i, name := range names {
		c := &store.ClusterOptions{Name: "relays", Key: []byte("0123456789abcdef0123456789abcdef"), Listen: routes[i]}
		for j := range names {
			if j != i {
				c.Routes = append(c.Routes, "nats://"+routes[j])
			}
		}
		n := &clusterProcess{name: name, addr: https[i], dataDir: shortDir(t)}
		var ready <-chan bool
		n.p, ready = spawnRelayProcess(t, relayProcessConfig{Listen: n.addr, DataDir: n.dataDir, CertFile: certFile, KeyFile: keyFile,
			URLs: urls, Node: name, Cluster: c}, nil)
		nodes, readies = append(nodes, n), append(readies, ready)
	}
	for i, n := range nodes {
		n.p.waitReady(t, readies[i])
	}
	return nodes, caFile
}

// TestClusterNodeCrash: three cua-relay processes; the node the Space
// attached to (the first of the order the relay gives its computer) is
// killed with SIGKILL (no go-away, no stream leadership handed over). The
// other two add a user and read shares again, and the Space lands on one
// of them and answers its owner through the other, each within
// crashBound; the test logs how long each took.
func TestClusterNodeCrash(t *testing.T) {
	nodes, caFile := startClusterProcesses(t, []string{"b", "a", "c"})
	ctx := t.Context()
	a := nodes[1]
	if _, err := a.admin().CreateUser(ctx, "alice", ""); err != nil {
		t.Fatal(err)
	}
	token, err := a.admin().CreateToken(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	alice := newBridgeAt(t, a.url(), caFile, token)
	s := startSpace(t, "")
	alice.addSpace(t, "box", s)
	if r := alice.register(t, "box"); !r.Online {
		t.Fatalf("relay_register_space: %+v, want online", r)
	}
	first := s.waitConnected(t, 0)
	if len(first.URLs) != 3 {
		t.Fatalf("the Space is on %q with URLs %v, want three URLs", first.Node, first.URLs)
	}
	// b is the Space's node, a and c the others (whichever they are).
	var b *clusterProcess
	var survivors []*clusterProcess
	for _, n := range nodes {
		if n.name == first.Node {
			b = n
		} else {
			survivors = append(survivors, n)
		}
	}
	if b == nil || len(survivors) != 2 {
		t.Fatalf("the Space is on %q, not one of the three nodes", first.Node)
	}
	web := webClient(t, caFile)
	shares := func(n *clusterProcess) error {
		ctx, cancel := context.WithTimeout(ctx, tryBound)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.url()+"/v1/computers/box/shares", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := web.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("shares through %s: %d", n.name, resp.StatusCode)
		}
		return nil
	}
	for _, n := range nodes {
		if err := shares(n); err != nil {
			t.Fatal(err)
		}
	}

	b.p.kill()
	crashed := time.Now()
	a, c := survivors[0], survivors[1]
	within := func(what string, cond func() error) time.Duration {
		t.Helper()
		for {
			err := cond()
			if err == nil {
				d := time.Since(crashed)
				t.Logf("%s: %s after %s's SIGKILL", what, d.Round(time.Millisecond), b.name)
				return d
			}
			if time.Since(crashed) > crashBound {
				t.Fatalf("%s: not within %s of %s's SIGKILL: %v", what, crashBound, b.name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	within("a user added on "+a.name, func() error {
		actx, cancel := context.WithTimeout(ctx, tryBound)
		defer cancel()
		_, err := a.admin().CreateUser(actx, "bob", "")
		if err != nil {
			// An answer lost with its write: the next try finds bob.
			if us, lerr := a.admin().Users(actx); lerr == nil && slices.ContainsFunc(us, func(u relayapi.User) bool { return u.Name == "bob" }) {
				return nil
			}
		}
		return err
	})
	within("bob read on "+c.name, func() error {
		actx, cancel := context.WithTimeout(ctx, tryBound)
		defer cancel()
		us, err := c.admin().Users(actx)
		if err == nil && !slices.ContainsFunc(us, func(u relayapi.User) bool { return u.Name == "bob" }) {
			err = fmt.Errorf("no bob in %v", us)
		}
		return err
	})
	within("shares read through "+a.name+" and "+c.name, func() error {
		if err := shares(a); err != nil {
			return err
		}
		return shares(c)
	})
	var landed string
	within("the Space on another node", func() error {
		st, err := s.d.RelayStatus(ctx)
		if err != nil {
			return err
		}
		if st.Node == b.name || st.Node == "" || !st.Connected || st.ConnectedSinceMS == first.ConnectedSinceMS {
			return fmt.Errorf("the Space: node %q, connected %v", st.Node, st.Connected)
		}
		landed = st.Node
		return nil
	})
	// Through the node the Space did not land on: the cross-node hop too.
	other := a
	if landed == a.name {
		other = c
	}
	aliceOnOther := newBridgeAt(t, other.url(), caFile, token)
	within("an exec through "+other.name+" (the Space on "+landed+")", func() error {
		if out := aliceOnOther.bash(t, "echo after-crash"); out != "after-crash\n" {
			return fmt.Errorf("exec through %s answered %q", other.name, out)
		}
		return nil
	})
}
