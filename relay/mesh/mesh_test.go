package mesh_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/mesh"
	"github.com/trycua/cua-spacesd/relay/protocol"
)

// roundTrip writes b on a stream to node and reads it back (the peer
// echoes).
func roundTrip(t *testing.T, m *mesh.Mesh, node string, b []byte) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := m.Dial(ctx, node)
	if err != nil {
		return err
	}
	defer c.Close()
	errc := make(chan error, 1)
	go func() { _, err := c.Write(b); errc <- err }()
	got := make([]byte, len(b))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if err := <-errc; err != nil {
		return err
	}
	if !bytes.Equal(got, b) {
		t.Fatalf("%d bytes came back changed", len(b))
	}
	return nil
}

// Streams between two nodes of a NATS cluster carry bytes both ways, in
// order and whole, many at once, over one trunk per pair.
func TestTrunkStreams(t *testing.T) {
	nc := natsCluster(t, 2)
	a := newNode(t, nc[0], "a", nil, nil)
	newNode(t, nc[1], "b", echo, nil)
	big := make([]byte, 8<<20)
	rand.Read(big)
	if err := roundTrip(t, a, "b", big); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			b := make([]byte, 1+i*4099)
			rand.Read(b)
			if err := roundTrip(t, a, "b", b); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := a.Trunks(); n != 1 {
		t.Fatalf("a holds %d trunks after 33 streams to one node, want 1", n)
	}
}

// A message lost on the way (what a slow consumer's drop would do) resets
// the trunk: the streams on it fail rather than carry wrong bytes, and the
// next stream gets a new trunk that works.
func TestTrunkResetsOnLostMessage(t *testing.T) {
	nc := natsCluster(t, 2)
	a := newNode(t, nc[0], "a", nil, nil)
	newNode(t, nc[1], "b", echo, nil)
	ctx := t.Context()
	c, err := a.Dial(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("before")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "before" {
		t.Fatalf("read %q, %v", got, err)
	}
	if !a.DropNextMessage("b") {
		t.Fatal("no trunk to b")
	}
	// The lost message, then one after it: b sees the gap.
	_, _ = c.Write([]byte("lost"))
	_, _ = c.Write([]byte("after"))
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := io.ReadFull(c, make([]byte, 9))
	if err == nil {
		t.Fatalf("the stream went on after a lost message (read %d bytes)", n)
	}
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		t.Fatalf("the stream hung after a lost message: %v", err)
	}
	eventually(t, "the reset trunk forgotten", func() bool { return a.Trunks() == 0 })
	if err := roundTrip(t, a, "b", []byte("a new trunk")); err != nil {
		t.Fatalf("after a reset: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A node that is not there: Dial fails (after the trunk's first ping),
// and does not hang.
func TestDialNodeGone(t *testing.T) {
	nc := natsCluster(t, 1)
	a := newNode(t, nc[0], "a", nil, nil)
	_, err := a.Dial(t.Context(), "nobody")
	if api.KindOf(err) != api.KindRelay {
		t.Fatalf("dial a node that is not there: %v, want kind relay", err)
	}
	if _, err := a.Dial(t.Context(), "a"); err == nil {
		t.Fatal("a trunk to this node itself")
	}
}

// The directory: a computer announced on b is found from a; no node once
// b stops announcing it.
func TestDirectory(t *testing.T) {
	nc := natsCluster(t, 3)
	a := newNode(t, nc[0], "a", nil, nil)
	b := newNode(t, nc[1], "b", nil, nil)
	newNode(t, nc[2], "c", nil, nil)
	if _, err := a.Locate(t.Context(), "box"); !errors.Is(err, mesh.ErrOffline) {
		t.Fatalf("locate before any announce: %v, want ErrOffline", err)
	}
	stop, err := b.Announce("box")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a finds box on b", func() bool {
		p, err := a.Locate(t.Context(), "box")
		return err == nil && p.Node == "b"
	})
	stop()
	eventually(t, "box offline", func() bool {
		_, err := a.Locate(t.Context(), "box")
		return errors.Is(err, mesh.ErrOffline)
	})
}

// A notice reaches every other node, not its publisher.
func TestNotices(t *testing.T) {
	nc := natsCluster(t, 3)
	got := make([]chan mesh.Notice, 3)
	var nodes []*mesh.Mesh
	for i, name := range []string{"a", "b", "c"} {
		got[i] = make(chan mesh.Notice, 4)
		nodes = append(nodes, newNode(t, nc[i], name, nil, func(n mesh.Notice) { got[i] <- n }))
	}
	want := mesh.Notice{Op: mesh.OpKick, Computer: "box", Person: "u1", Why: "the share ended"}
	// Interest in the notices' subject crosses the routes a moment after
	// the subscriptions: publish until both peers heard one.
	for _, i := range []int{1, 2} {
		eventually(t, "a notice reaches a peer", func() bool {
			if err := nodes[0].Publish(want); err != nil {
				t.Fatal(err)
			}
			select {
			case n := <-got[i]:
				want.From = "a"
				if n != want {
					t.Fatalf("node %d got %+v, want %+v", i, n, want)
				}
				want.From = ""
				return true
			case <-time.After(50 * time.Millisecond):
				return false
			}
		})
	}
	select {
	case n := <-got[0]:
		t.Fatalf("the publisher heard its own notice %+v", n)
	default:
	}
}

// An open request and both answers read back as written.
func TestOpenRoundTrip(t *testing.T) {
	for _, o := range []mesh.OpenRequest{
		{Kind: mesh.KindHTTP, Computer: "box", Person: "u1", PersonName: "alice", Role: protocol.RoleOwner},
		{Kind: mesh.KindOffer, Computer: "box", Person: protocol.LinkPerson, PersonName: protocol.LinkPerson, Role: protocol.RoleLink},
		{Kind: mesh.KindData, Computer: "b-2", Person: "u2", Role: protocol.RoleViewer},
	} {
		var buf bytes.Buffer
		if err := mesh.WriteOpen(&buf, o); err != nil {
			t.Fatal(err)
		}
		buf.WriteString("rest")
		got, err := mesh.ReadOpen(&buf)
		if err != nil || got != o || buf.String() != "rest" {
			t.Fatalf("read %+v, %v (left %q), want %+v", got, err, buf.String(), o)
		}
	}
	if err := mesh.WriteOpen(io.Discard, mesh.OpenRequest{Kind: 9, Computer: "x", Person: "p", Role: protocol.RoleOwner}); err == nil {
		t.Fatal("an unknown kind written")
	}
	for _, refused := range []error{nil, api.Errorf(api.KindLimitExceeded, "too many").WithReason("too_many_streams")} {
		var buf bytes.Buffer
		if err := mesh.WriteAnswer(&buf, refused); err != nil {
			t.Fatal(err)
		}
		got := mesh.ReadAnswer(&buf)
		if (got == nil) != (refused == nil) || refused != nil && (api.KindOf(got) != api.KindLimitExceeded || api.AsError(got).Reason != "too_many_streams") {
			t.Fatalf("answer %v read back as %v", refused, got)
		}
	}
}
