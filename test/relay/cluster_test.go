package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
	"github.com/trycua/cua-spacesd/relay/store"
)

// cluster is three relay nodes in this process on one NATS cluster
// (routes on loopback, the mesh key), each with its own HTTPS listener
// (real TLS, one test CA) and data dir; each hands Spaces its own URL.
type cluster struct {
	caFile string
	nodes  []*relayd.Relay
	addrs  []string
}

func newCluster(t testing.TB, names ...string) *cluster {
	t.Helper()
	ca := tlstest.NewCA(t)
	c := &cluster{caFile: ca.WriteCA(t, t.TempDir())}
	cert := ca.Issue(t, "127.0.0.1", "localhost")
	key := []byte("0123456789abcdef0123456789abcdef")
	for attempt := 0; ; attempt++ {
		var routes []int
		for range names {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			routes = append(routes, ln.Addr().(*net.TCPAddr).Port)
			ln.Close()
		}
		c.nodes, c.addrs = make([]*relayd.Relay, len(names)), make([]string, len(names))
		errs := make([]error, len(names))
		// A bound for the quorum's wait (the store bounds its setup after
		// it): a node whose peers failed must not wait for them forever.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		var wg sync.WaitGroup
		for i, name := range names {
			o := &store.ClusterOptions{Name: "relays", Key: key, Listen: fmt.Sprintf("127.0.0.1:%d", routes[i])}
			for j := range names {
				if j != i {
					o.Routes = append(o.Routes, fmt.Sprintf("nats://127.0.0.1:%d", routes[j]))
				}
			}
			dir := t.TempDir()
			wg.Go(func() {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					errs[i] = err
					return
				}
				c.addrs[i] = ln.Addr().String()
				c.nodes[i], errs[i] = relayd.Start(ctx, ln, relayd.Options{DataDir: dir, Node: name,
					URLs: []string{"wss://" + c.addrs[i]}, TLS: relayd.TLSConfig(cert), Version: "test", Cluster: o})
				if errs[i] != nil {
					ln.Close()
				}
			})
		}
		wg.Wait()
		cancel()
		err := errors.Join(errs...)
		if err == nil {
			for _, n := range c.nodes {
				t.Cleanup(func() { _ = n.Close() })
			}
			return c
		}
		for _, n := range c.nodes {
			if n != nil {
				_ = n.Close()
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

func (c *cluster) url(i int) string { return "https://" + c.addrs[i] }

// user adds a user (on node 0: the store is the cluster's) and answers its
// API token.
func (c *cluster) user(t testing.TB, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.nodes[0].Store.CreateUser(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	_, tok, err := c.nodes[0].Store.CreateUserToken(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestClusterSpaceOnAnotherNode: a real Space attached to node b; its
// owner drives it through node a (a command, a PTY, a download over a data
// connection, a WHEP stream); a viewer of a share made on node a, through
// node c, is refused input and gets frames; unsharing on node a ends the
// viewer's stream held through c.
func TestClusterSpaceOnAnotherNode(t *testing.T) {
	desktoptest.Require(t)
	vp8test.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	desktoptest.NewXClient(t, display, desktoptest.RandomWord(t), 200, 150, []desktoptest.Fill{{W: 200, H: 150, RGB: 0x3366cc}})
	c := newCluster(t, "a", "b", "c")
	ctx := t.Context()
	aliceToken, bobToken := c.user(t, "alice"), c.user(t, "bob")
	if _, err := c.nodes[0].Store.CreateTeam(ctx, "crew"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, err := c.nodes[0].Store.AddTeamMember(ctx, "crew", u); err != nil {
			t.Fatal(err)
		}
	}

	// The Space is published through node b, and attaches there.
	aliceOnB := newBridgeAt(t, c.url(1), c.caFile, aliceToken)
	s := startSpace(t, display)
	aliceOnB.addSpace(t, "box", s)
	aliceOnB.register(t, "box")
	st := s.waitConnected(t, 0)
	if st.Node != "b" || c.nodes[1].Server.Sessions() != 1 {
		t.Fatalf("the Space attached to %q (b holds %d sessions), want b", st.Node, c.nodes[1].Server.Sessions())
	}
	aliceOnA := newBridgeAt(t, c.url(0), c.caFile, aliceToken)
	desktoptest.Eventually(t, "node a lists relay:box online", func() bool {
		out, _, code := aliceOnA.cli(t, "space", "ls")
		return code == 0 && strings.Contains(out, "relay:box") && !strings.Contains(out, "offline")
	})

	t.Run("owner through a", func(t *testing.T) {
		var res struct {
			Stdout   string `json:"stdout"`
			ExitCode int    `json:"exit_code"`
		}
		aliceOnA.call(t, "space_bash", map[string]any{"space": "relay:box", "command": "echo tool-$((6*7))"}, &res)
		if res.ExitCode != 0 || res.Stdout != "tool-42\n" {
			t.Fatalf("space_bash through a: %+v", res)
		}

		cl, _, err := aliceOnA.reg.Client("relay:box")
		if err != nil {
			t.Fatal(err)
		}
		p, err := cl.Start(ctx, api.StartRequest{Command: api.Command{Argv: []string{"sh"}}, PTY: &api.PTYSize{Cols: 80, Rows: 24}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cl.Signal(context.Background(), p.ID, "KILL") }()
		ps, err := cl.StreamProcess(ctx, p.ID, 0, 0)
		if err != nil {
			t.Fatalf("PTY stream through a: %v", err)
		}
		defer ps.Close()
		if err := ps.Send(api.StreamInput{Type: "stdin", Data: []byte("echo pty-$((6*7))\n")}); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		for !strings.Contains(got.String(), "pty-42") {
			ev, err := ps.Next()
			if err != nil {
				t.Fatalf("PTY stream: %v after %q", err, got.String())
			}
			got.Write(ev.Data)
		}

		dir := t.TempDir()
		src := filepath.Join(s.stateDir, "big.bin")
		want := writeRandom(t, src, 32<<20)
		before := c.nodes[1].Server.Metrics().DataConns.Load()
		back := filepath.Join(dir, "back.bin")
		if out, errOut, code := aliceOnA.cli(t, "cp", "relay:box:"+src, back); code != 0 {
			t.Fatalf("cp down through a: exit %d, %q %q", code, out, errOut)
		}
		if got := sha256File(t, back); got != want {
			t.Fatalf("32 MiB came back through a with sha256 %x, want %x", got, want)
		}
		if c.nodes[1].Server.Metrics().DataConns.Load() == before {
			t.Fatal("the download used no data connection on b")
		}

		ep := aliceOnA.streamEndpoint(t, "relay:box", map[string]any{"ticket_ttl": 600})
		if !strings.HasPrefix(ep.OfferURL, c.url(0)+"/c/box/") {
			t.Fatalf("the stream endpoint through a: %+v", ep)
		}
		watch(t, webClient(t, c.caFile), ep.OfferURL, ep.Ticket, rtctest.Options{})
	})

	rc, err := relayapi.New(c.url(0), aliceToken, relayapi.Trust{CAFile: c.caFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Share(ctx, "box", relayapi.ShareRequest{Who: "bob", Role: "viewer"}); err != nil {
		t.Fatalf("share on a: %v", err)
	}
	web := webClient(t, c.caFile)

	t.Run("viewer through c", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url(2)+"/c/box"+api.PathExec, strings.NewReader(`{"argv":["true"]}`))
		req.Header.Set("Authorization", "Bearer "+bobToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := web.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env api.ErrorEnvelope
		_ = json.NewDecoder(resp.Body).Decode(&env)
		if resp.StatusCode != http.StatusForbidden || env.Error == nil || env.Error.Kind != api.KindPermissionDenied {
			t.Fatalf("a viewer's exec through c: %d %+v, want 403 permission_denied", resp.StatusCode, env.Error)
		}
	})

	t.Run("unshare on a ends the stream through c", func(t *testing.T) {
		r := rtctest.New(t, rtctest.Options{Channels: []string{api.ChannelControl}})
		res, err := rtctest.PostVia(ctx, web, c.url(2)+"/c/box"+api.PathStreamScreen, bobToken, r.Offer)
		if err != nil || res.Status != http.StatusCreated {
			t.Fatalf("bob's offer through c: %+v, %v", res, err)
		}
		r.Accept(t, res.Answer)
		r.NextFrame(t, true, frameTimeout)
		r.WaitOpen(t, api.ChannelControl, frameTimeout)
		if _, err := rc.Unshare(ctx, "box", "bob"); err != nil {
			t.Fatalf("unshare on a: %v", err)
		}
		select {
		case <-r.Closed[api.ChannelControl]:
		case <-time.After(30 * time.Second):
			t.Fatal("bob's stream through c still live 30 s after the unshare on a")
		}
		_ = r.PC.Close()
	})
}

// webClient is an HTTPS client that trusts the CA in caFile.
func webClient(t testing.TB, caFile string) *http.Client {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: caTLS(t, caFile)}, Timeout: 60 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	return c
}
