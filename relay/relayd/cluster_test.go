package relayd_test

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/store"
)

// clusterKey is the test clusters' mesh key.
var clusterKey = []byte("0123456789abcdef0123456789abcdef")

// startCluster starts len(names) relay nodes in this process as one
// cluster: routes on loopback authenticated by the mesh key, each node's
// HTTPS with real TLS (one test CA), its own data dir. They start at once
// (each waits for a quorum); a route port taken meanwhile starts them
// again.
func startCluster(t testing.TB, limits relayd.Limits, names ...string) []*testRelay {
	t.Helper()
	ca := tlstest.NewCA(t)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if limits.BadTokenPause == 0 {
		limits.BadTokenPause = 5 * time.Millisecond
	}
	for attempt := 0; ; attempt++ {
		routes := make([]int, len(names))
		for i := range routes {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			routes[i] = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
		}
		nodes := make([]*testRelay, len(names))
		errs := make([]error, len(names))
		var wg sync.WaitGroup
		for i, name := range names {
			c := &store.ClusterOptions{Name: "relays", Key: clusterKey, Listen: fmt.Sprintf("127.0.0.1:%d", routes[i])}
			for j := range names {
				if j != i {
					c.Routes = append(c.Routes, fmt.Sprintf("nats://127.0.0.1:%d", routes[j]))
				}
			}
			dir := t.TempDir()
			wg.Go(func() {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					errs[i] = err
					return
				}
				r, err := relayd.Start(t.Context(), ln, relayd.Options{
					DataDir: dir, Node: name, TLS: relayd.TLSConfig(ca.Issue(t, "127.0.0.1")), Limits: limits, Cluster: c,
				})
				if err != nil {
					ln.Close()
					errs[i] = err
					return
				}
				nodes[i] = &testRelay{Relay: r, dataDir: dir, addr: ln.Addr().String(), pool: pool, ca: ca, limits: limits}
			})
		}
		wg.Wait()
		err := errors.Join(errs...)
		if err == nil {
			for _, n := range nodes {
				t.Cleanup(func() { n.Close() })
				n.t = t
			}
			return nodes
		}
		for _, n := range nodes {
			if n != nil {
				n.Close()
			}
		}
		// Only a route port taken since it was picked (another test's)
		// starts the nodes again; the store's own failures are the test's.
		if attempt < 3 && errors.Is(err, syscall.EADDRINUSE) {
			t.Logf("a route port was taken meanwhile (try %d): %v", attempt+1, err)
			continue
		}
		t.Fatal(err)
	}
}

// clusterFixture: ann owns pc, attached to node b; bob is in ann's team.
type clusterFixture struct {
	a, b, c  *testRelay
	ann, bob string
	sp       *standInSpace
	held     chan struct{} // a /hold request reached the Space
}

func newClusterFixture(t testing.TB) *clusterFixture {
	nodes := startCluster(t, relayd.Limits{}, "a", "b", "c")
	f := &clusterFixture{a: nodes[0], b: nodes[1], c: nodes[2], held: make(chan struct{}, 16)}
	// Users and teams made on a, through its admin socket; the store is
	// the cluster's, so b and c know them.
	f.ann, f.bob = f.a.user("ann"), f.a.user("bob")
	f.a.team("red", "ann", "bob")
	ct := f.a.register(f.ann, "pc")
	f.sp = f.b.attach(ct.Token, f.handler())
	// The directory entry crosses the routes a moment after the attach.
	eventually(t, "pc online through a and c", func() bool {
		return f.online(f.a) && f.online(f.c)
	})
	return f
}

func (f *clusterFixture) online(r *testRelay) bool {
	st, b, _ := r.do(http.MethodGet, relayapi.PathComputers, f.ann, nil)
	return st == http.StatusOK && strings.Contains(string(b), `"online":true`) && strings.Contains(string(b), `"node":"b"`)
}

// handler is the echo handler, with /hold (a line, then the answer stays
// open until the stream ends) and the file content route serving
// ?size= random bytes.
func (f *clusterFixture) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", echoHandler())
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		info, _ := r.Context().Value(grantCtxKey{}).(connInfo)
		fmt.Fprintf(w, "held for %s as %s\n", info.grant.PersonName, info.grant.Role)
		w.(http.Flusher).Flush()
		select {
		case f.held <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	})
	mux.HandleFunc("GET "+api.PathFileContent, func(w http.ResponseWriter, r *http.Request) {
		info, _ := r.Context().Value(grantCtxKey{}).(connInfo)
		if !info.data {
			http.Error(w, "not on a data connection", http.StatusTeapot)
			return
		}
		var size int64
		fmt.Sscan(r.URL.Query().Get("size"), &size)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(size))
		_, _ = io.CopyN(w, zeroReader{}, size)
	})
	return mux
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A Space attached to node b, its owner through node a: calls, a
// WebSocket, a file download over a data connection and a WHEP offer all
// reach it, each with the owner's grant, each applied on b.
func TestClusterOwnerThroughAnotherNode(t *testing.T) {
	f := newClusterFixture(t)
	st, b, _ := f.a.do(http.MethodPost, "/c/pc/v1/exec?x=1", f.ann, []byte(`{"argv":["true"]}`))
	if st != http.StatusOK {
		t.Fatalf("call through a: %d %s", st, b)
	}
	e := decodeEcho(t, b)
	if e.Person == "" || e.PersonName != "ann" || e.Role != "owner" || e.Path != "/v1/exec" || e.Query != "x=1" || e.Auth != "" || e.Data {
		t.Fatalf("the Space saw %+v", e)
	}
	if n := f.b.Server.Metrics().HomeStreams.Load(); n == 0 {
		t.Fatal("b counted no stream opened for another node")
	}
	if n := f.a.Server.Metrics().RemoteStreams.Load(); n == 0 {
		t.Fatal("a counted no stream to another node")
	}

	// A pooled stream carries the next call: no new stream on b.
	before := f.b.Server.Metrics().HomeStreams.Load()
	for range 5 {
		if st, b, _ := f.a.do(http.MethodGet, "/c/pc/v1/health", f.ann, nil); st != http.StatusOK {
			t.Fatalf("call: %d %s", st, b)
		}
	}
	if n := f.b.Server.Metrics().HomeStreams.Load() - before; n > 1 {
		t.Logf("%d new streams for 5 calls (the test client's own connections may differ)", n)
	}

	// A WebSocket through a (a PTY's way).
	ws := dialWS(t, f.a, f.ann, "/c/pc/ws")
	for _, msg := range []string{"ls\n", "echo hi\n"} {
		if err := ws.WriteMessage(2, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, got, err := ws.ReadMessage()
		if err != nil || string(got) != msg {
			t.Fatalf("websocket echo %q: %q %v", msg, got, err)
		}
	}
	ws.Close()

	// A download of some MiB: on a data connection of the Space's to b.
	const size = 24 << 20
	resp := f.a.get(t, api.PathFileContent+"?path=/x&size="+fmt.Sprint(size), f.ann)
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || n != size {
		t.Fatalf("download through a: %d, %d bytes, %v", resp.StatusCode, n, err)
	}

	// A WHEP offer: a stream of its own, with the owner's grant.
	st, b, _ = f.a.do(http.MethodPost, "/c/pc"+api.PathStreamScreen, f.ann, []byte("v=0\r\n"), "Content-Type", "application/sdp")
	if e := decodeEcho(t, b); st != http.StatusOK || e.Role != "owner" || e.Path != api.PathStreamScreen {
		t.Fatalf("offer through a: %d %s", st, b)
	}

	// The limits are b's: its session counts the streams through a.
	shares := f.a.shares(t, f.ann)
	if !shares.Online {
		t.Fatalf("shares through a: not online: %+v", shares)
	}
}

// A share's viewer through node c gets a viewer's grant; unsharing on node
// a ends the viewer's stream held through c, and the Space hears a Kick.
func TestClusterUnshareAcrossNodes(t *testing.T) {
	f := newClusterFixture(t)
	if st, b, _ := f.a.do(http.MethodPut, "/v1/computers/pc/shares", f.ann, relayapi.ShareRequest{Who: "bob", Role: protocol.RoleViewer}); st != http.StatusOK {
		t.Fatalf("share: %d %s", st, b)
	}
	st, b, _ := f.c.do(http.MethodGet, "/c/pc/v1/screen", f.bob, nil)
	if e := decodeEcho(t, b); st != http.StatusOK || e.Role != "viewer" || e.PersonName != "bob" {
		t.Fatalf("viewer through c: %d %s", st, b)
	}
	resp := f.c.get(t, "/hold", f.bob)
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "held for bob as viewer\n" {
		t.Fatalf("held stream: %q %v", line, err)
	}
	// Connected, as a sees it (from b's directory answer).
	eventually(t, "bob connected, through a", func() bool {
		s := f.a.shares(t, f.ann)
		return len(s.Shares) == 1 && s.Shares[0].Connected
	})

	if st, b, _ := f.a.do(http.MethodDelete, "/v1/computers/pc/shares?who=bob", f.ann, nil); st != http.StatusOK {
		t.Fatalf("unshare on a: %d %s", st, b)
	}
	select {
	case k := <-f.sp.kicks:
		if k.Person == "" || k.Reason != protocol.CloseKicked {
			t.Fatalf("kick %+v", k.Kick)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the Space on b heard no Kick after the unshare on a")
	}
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("bob's stream through c outlived the unshare on a")
	}
	if st, _, _ := f.c.do(http.MethodGet, "/c/pc/v1/screen", f.bob, nil); st != http.StatusNotFound {
		t.Fatalf("bob after the unshare: %d, want 404", st)
	}
}

// A computer that leaves b is offline through a; its removal on a ends
// its session on b.
func TestClusterOfflineAndRemoval(t *testing.T) {
	f := newClusterFixture(t)
	if st, b, _ := f.a.do(http.MethodDelete, "/v1/computers/pc", f.ann, nil); st != http.StatusOK {
		t.Fatalf("remove on a: %d %s", st, b)
	}
	if code := f.sp.waitClosed(); code != protocol.CloseTokenRevoked {
		t.Fatalf("the session on b ended with %s, want token_revoked", code)
	}
	ct := f.a.register(f.ann, "pc2")
	sp := f.b.attach(ct.Token, echoHandler())
	eventually(t, "pc2 reached through a", func() bool {
		st, _, _ := f.a.do(http.MethodGet, "/c/pc2/v1/health", f.ann, nil)
		return st == http.StatusOK
	})
	sp.close()
	eventually(t, "pc2 offline through a", func() bool {
		st, b, _ := f.a.do(http.MethodGet, "/c/pc2/v1/health", f.ann, nil)
		return st == http.StatusBadGateway && bytes.Contains(b, []byte("offline"))
	})
}

// A Space that attaches to c while its old session on b lives on (it
// redialled before b noticed) replaces it there: one home only.
func TestClusterNewerSessionElsewhere(t *testing.T) {
	f := newClusterFixture(t)
	ct := f.a.register(f.ann, "pc") // a new token: the old session ends (rotated)
	if code := f.sp.waitClosed(); code != protocol.CloseTokenRotated {
		t.Fatalf("rotated: %s", code)
	}
	sp := f.b.attach(ct.Token, echoHandler())
	f.c.attach(ct.Token, echoHandler())
	if code := sp.waitClosed(); code != protocol.CloseReplaced {
		t.Fatalf("the old session on b ended with %s, want replaced", code)
	}
}

func (r *testRelay) get(t testing.TB, path, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, r.url("/c/pc"+path), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := r.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (r *testRelay) shares(t testing.TB, token string) relayapi.Shares {
	t.Helper()
	st, b, _ := r.do(http.MethodGet, "/v1/computers/pc/shares", token, nil)
	if st != http.StatusOK {
		t.Fatalf("shares: %d %s", st, b)
	}
	var s relayapi.Shares
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The home node dies: the Space attaches to another node (here by hand:
// the Space's redial is the attacher's), and its owner's next request
// through a reaches it there, its old home's trunk and pools left behind.
func TestClusterHomeNodeDies(t *testing.T) {
	f := newClusterFixture(t)
	if st, b, _ := f.a.do(http.MethodGet, "/c/pc/v1/health", f.ann, nil); st != http.StatusOK {
		t.Fatalf("through a: %d %s", st, b)
	}
	ct := f.a.register(f.ann, "pc")
	f.sp.waitClosed()
	f.b.attach(ct.Token, echoHandler())
	if st, b, _ := f.a.do(http.MethodGet, "/c/pc/v1/health", f.ann, nil); st != http.StatusOK {
		t.Fatalf("through a, the Space on b again: %d %s", st, b)
	}
	if err := f.b.Close(); err != nil {
		t.Fatal(err)
	}
	f.c.attach(ct.Token, echoHandler())
	eventually(t, "pc reached through a on its new home c", func() bool {
		st, b, _ := f.a.do(http.MethodGet, "/c/pc/v1/health", f.ann, nil)
		return st == http.StatusOK && decodeEcho(t, b).PersonName == "ann"
	})
}

// A viewer link's request through another node than the Space's: its
// ticket passes on for the Space to check, with a grant of role link, on a
// stream of its own that the home node's link rate counts.
func TestClusterLinkThroughAnotherNode(t *testing.T) {
	f := newClusterFixture(t)
	st, b, _ := f.c.do(http.MethodGet, "/c/pc"+api.PathStreamICE, "", nil, "Authorization", "Bearer cuat1.payload.mac")
	if st != http.StatusOK {
		t.Fatalf("a link's ICE query through c: %d %s", st, b)
	}
	if e := decodeEcho(t, b); e.Role != string(protocol.RoleLink) || e.Auth != "Bearer cuat1.payload.mac" || e.Person != protocol.LinkPerson {
		t.Fatalf("the Space saw %+v", e)
	}
	if n := f.b.Server.Metrics().HomeStreams.Load(); n == 0 {
		t.Fatal("the link's stream was not opened by b")
	}
	// A link holder of an offline computer, through any node, learns
	// nothing more than of none.
	st, b, _ = f.c.do(http.MethodGet, "/c/nothing"+api.PathStreamICE, "", nil, "Authorization", "Bearer cuat1.payload.mac")
	if st != http.StatusBadGateway {
		t.Fatalf("a link to no computer through c: %d %s", st, b)
	}
}
