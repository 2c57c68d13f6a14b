package mesh_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/trycua/cua-spacesd/relay/mesh"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// natsCluster starts n nats-servers in this process, routed to each other
// on loopback (no client port, as the relay runs them), and answers an
// in-process connection to each.
func natsCluster(t testing.TB, n int) []*nats.Conn {
	t.Helper()
	var conns []*nats.Conn
	var seed string
	for i := range n {
		o := &server.Options{
			// nats-server starts its routes only once its client listener is
			// up (DontListen would keep them down): a loopback one.
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "mesh-test", Host: "127.0.0.1", Port: -1},
		}
		if seed != "" {
			o.Routes = server.RoutesFromStr(seed)
		}
		ns, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		if !ns.ReadyForConnections(10 * time.Second) {
			t.Fatal("nats-server did not start")
		}
		if seed == "" {
			seed = "nats://" + ns.ClusterAddr().String()
		}
		nc, err := nats.Connect("", nats.InProcessServer(ns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		conns = append(conns, nc)
		defer func() {
			deadline := time.Now().Add(30 * time.Second)
			for ns.NumRoutes() < n-1 {
				if time.Now().After(deadline) {
					t.Fatalf("%s has %d routes, want %d", ns.Name(), ns.NumRoutes(), n-1)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	return conns
}

// node is a mesh on one connection, whose accepted streams go to accept.
func newNode(t testing.TB, nc *nats.Conn, name string, accept func(peer string, c net.Conn), notice func(mesh.Notice)) *mesh.Mesh {
	t.Helper()
	m, err := mesh.New(mesh.Options{Conn: nc, Node: name, Accept: accept, Notice: notice})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// echo copies a stream back to itself.
func echo(_ string, c net.Conn) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
