package relayd_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/store"
)

// opsNode is one relay node of startOpsCluster's.
type opsNode struct {
	*relayd.Relay
	name, dataDir string
}

// startOpsCluster starts three relay nodes as one cluster on loopback:
// HTTPS and the NATS routes on real TLS (one test CA; the routes verify
// each other's certificates both ways), the routes authenticated by a
// mesh key. Route ports are picked free and tried again on a collision.
func startOpsCluster(t *testing.T) []*opsNode {
	t.Helper()
	ca := tlstest.NewCA(t)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	cert := ca.Issue(t, "127.0.0.1")
	routeTLS := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	key := []byte(store.GenerateKey())
	nodes := []*opsNode{{name: "n1", dataDir: t.TempDir()}, {name: "n2", dataDir: t.TempDir()}, {name: "n3", dataDir: t.TempDir()}}
	for attempt := 0; ; attempt++ {
		ports := freeRoutePorts(t, len(nodes))
		var urls []string
		lns := make([]net.Listener, len(nodes))
		for i := range nodes {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			lns[i] = ln
			urls = append(urls, "wss://"+ln.Addr().String())
		}
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			c := &store.ClusterOptions{Name: "relays", Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Key: key, TLS: routeTLS}
			for j := range nodes {
				if j != i {
					c.Routes = append(c.Routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[j]))
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
				defer cancel()
				n.Relay, errs[i] = relayd.Start(ctx, lns[i], relayd.Options{
					DataDir: n.dataDir, Node: n.name, URLs: urls, TLS: relayd.TLSConfig(cert), Cluster: c,
				})
			}()
		}
		wg.Wait()
		err := errors.Join(errs...)
		if err == nil {
			break
		}
		for i, n := range nodes {
			if n.Relay != nil {
				n.Relay.Close()
				n.Relay = nil
			} else {
				lns[i].Close()
			}
		}
		if attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			continue
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Close()
		}
	})
	return nodes
}

func freeRoutePorts(t *testing.T, n int) []int {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// Three relay nodes as one: a user added on one node's admin socket is on
// another's; every node hands Spaces the whole cluster's URLs; each node's
// status shows the three nodes, a metadata leader and every stream on
// three current replicas; its metrics show the NATS health.
func TestClusterOperatorsView(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	nodes := startOpsCluster(t)
	t.Logf("three relay nodes up in %s", time.Since(start).Round(time.Millisecond))
	if _, err := relayd.NewAdminClient(nodes[0].dataDir).CreateUser(ctx, "ann", ""); err != nil {
		t.Fatal(err)
	}
	if users, err := relayd.NewAdminClient(nodes[2].dataDir).Users(ctx); err != nil || len(users) != 1 || users[0].Name != "ann" {
		t.Fatalf("users on n3: %+v %v", users, err)
	}
	for _, n := range nodes {
		if len(n.URLs) != 3 {
			t.Fatalf("%s hands out %v, want the three nodes' URLs", n.name, n.URLs)
		}
	}
	for _, n := range nodes {
		var st relayapi.Status
		eventuallyErr(t, n.name+"'s status: three nodes, every stream on three current replicas", func() (err error) {
			if st, err = relayd.NewAdminClient(n.dataDir).Status(ctx); err != nil {
				return err
			}
			return clusterSettled(st)
		})
		if st.Node != n.name || st.Cluster != "relays" {
			t.Errorf("status of %s: node %q cluster %q", n.name, st.Node, st.Cluster)
		}
	}
	m, err := relayd.NewAdminClient(nodes[1].dataDir).Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ncua_relay_jetstream_cluster_size 3\n", "\ncua_relay_jetstream_meta_leader 1\n", "\ncua_relay_nats_routes "} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics of n2 lack %q", strings.TrimSpace(want))
		}
	}
	if strings.Contains(m, "\ncua_relay_nats_routes 0\n") {
		t.Error("metrics of n2: no routes up")
	}
}

func clusterSettled(st relayapi.Status) error {
	if st.MetaLeader == "" || len(st.Nodes) != 3 || st.Routes == 0 {
		return fmt.Errorf("leader %q, nodes %+v, routes %d", st.MetaLeader, st.Nodes, st.Routes)
	}
	for _, s := range st.Streams {
		current := 0
		for _, p := range s.Peers {
			if p.Current && !p.Offline {
				current++
			}
		}
		if s.Replicas != 3 || s.Leader == "" || current != 2 {
			return fmt.Errorf("stream %s: %+v", s.Name, s)
		}
	}
	return nil
}

// eventuallyErr waits for cond to answer nil: a bound for a loaded
// machine, not a figure.
func eventuallyErr(t *testing.T, what string, cond func() error) {
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
