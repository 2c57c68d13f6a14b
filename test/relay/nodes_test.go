package relay_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/faultproxy"
	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/store"
)

// nodes are relay nodes that share one store in this process: every node
// of a cluster signs grants with the key of the shared store and checks
// the same tokens, which is what a Space that moves between nodes needs.
// (One store.Store under several relayd.Servers stands in for a clustered
// store until the cluster itself runs in tests.) Spaces reach each node
// through a fault proxy of its own, so that a test can kill a node hard.
type nodes struct {
	t      testing.TB
	caFile string
	store  *store.Store
	nodes  []*node
	logs   *testenv.SyncBuffer
}

// node is one relayd.Server on its own TLS listener, with its admin
// socket in a directory of its own.
type node struct {
	name     string
	srv      *relayd.Server
	addr     string            // its listener
	link     *faultproxy.Proxy // what Spaces dial (wss://link.Addr)
	adminDir string
	cancel   context.CancelFunc
	done     chan struct{}
}

// url is the node's HTTPS URL, as a bridge logs in to it.
func (n *node) url() string { return "https://" + n.addr }

// attachURL is the wss:// URL Spaces reach it at.
func (n *node) attachURL() string { return "wss://" + n.link.Addr }

// admin is the node's admin client (cua-relay drain, status).
func (n *node) admin() *relayd.AdminClient { return relayd.NewAdminClient(n.adminDir) }

// kill ends the node hard: every connection to it cut, its port closed,
// no go_away sent.
func (n *node) kill() { n.link.Close() }

func startNodes(t testing.TB, count int) *nodes {
	t.Helper()
	ca := tlstest.NewCA(t)
	ns := &nodes{t: t, caFile: ca.WriteCA(t, t.TempDir()), logs: &testenv.SyncBuffer{}}
	log := slog.New(slog.NewTextHandler(ns.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := store.Open(context.Background(), t.TempDir(), log, store.Options{Node: "relay-1"})
	if err != nil {
		t.Fatal(err)
	}
	ns.store = st
	t.Cleanup(func() { _ = st.Close() })
	cert := ca.Issue(t, "127.0.0.1", "localhost")
	// Every listener and link first: each node hands out every node's URL.
	var urls []string
	var lns []net.Listener
	for i := range count {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		link, err := faultproxy.Start(ln.Addr().String())
		if err != nil {
			ln.Close()
			t.Fatal(err)
		}
		t.Cleanup(link.Close)
		n := &node{name: fmt.Sprintf("relay-%d", i+1), addr: ln.Addr().String(), link: link, adminDir: shortDir(t)}
		ns.nodes = append(ns.nodes, n)
		lns = append(lns, ln)
		urls = append(urls, n.attachURL())
	}
	for i, n := range ns.nodes {
		ns.serve(n, lns[i], urls, relayd.TLSConfig(cert), log)
	}
	return ns
}

// shortDir is a temp dir whose admin socket's path fits a unix socket's.
func shortDir(t testing.TB) string {
	d := t.TempDir()
	if len(filepath.Join(d, "admin.sock")) > 100 {
		t.Fatalf("temp dir %s too long for a unix socket", d)
	}
	return d
}

// serve starts n's server on ln, its Spaces given urls (every node's).
func (ns *nodes) serve(n *node, ln net.Listener, urls []string, tlsCfg *tls.Config, log *slog.Logger) {
	t := ns.t
	srv, err := relayd.New(relayd.Config{Store: ns.store, Logger: log.With("node", n.name), Node: n.name, URLs: urls, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	adminLn, err := relayd.ListenAdmin(n.adminDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.srv, n.cancel, n.done = srv, cancel, make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.ServeAdmin(ctx, adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("%s admin: %v", n.name, err)
		}
	}()
	go func() {
		defer close(n.done)
		if err := srv.Serve(ctx, ln, tlsCfg); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("%s serve: %v", n.name, err)
		}
		<-served
	}()
	t.Cleanup(func() { cancel(); <-n.done })
}

// user adds a user to the shared store and answers its API token.
func (ns *nodes) user(name string) string {
	ns.t.Helper()
	ctx := context.Background()
	if _, err := ns.store.CreateUser(ctx, name, ""); err != nil {
		ns.t.Fatal(err)
	}
	_, tok, err := ns.store.CreateUserToken(ctx, name)
	if err != nil {
		ns.t.Fatal(err)
	}
	return tok
}

// spaceOn is a Space registered through owner's bridge (logged in to
// one node): the relay hands it every node's URL; it is attached.
// homeAndOther answers the node of two that st's session is on, and the
// other one.
func (ns *nodes) homeAndOther(t testing.TB, st api.RelayStatus) (home, other *node) {
	t.Helper()
	if len(ns.nodes) != 2 {
		t.Fatalf("homeAndOther: %d nodes, want 2", len(ns.nodes))
	}
	switch st.Node {
	case ns.nodes[0].name:
		return ns.nodes[0], ns.nodes[1]
	case ns.nodes[1].name:
		return ns.nodes[1], ns.nodes[0]
	}
	t.Fatalf("the Space is on %q, neither node", st.Node)
	return nil, nil
}

func (ns *nodes) spaceOn(t testing.TB, owner *bridge) (*space, api.RelayStatus) {
	t.Helper()
	s := startSpace(t, "")
	owner.addSpace(t, "box", s)
	if r := owner.register(t, "box"); !r.Online {
		t.Fatalf("relay_register_space: %+v, want online", r)
	}
	st := s.waitConnected(t, 0)
	if len(st.URLs) != len(ns.nodes) {
		t.Fatalf("the Space was given %v, want every node's URL", st.URLs)
	}
	return s, st
}
