package streamsvc_test

import (
	"fmt"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// whoOf waits for a who message of n viewers and answers them.
func whoOf(t *testing.T, r *rtctest.Receiver, n int) []api.PresenceViewer {
	t.Helper()
	return controlUntil(t, r, fmt.Sprintf("a who of %d viewers", n), func(m api.ViewerControl) bool {
		return m.Type == api.ControlWho && len(m.Viewers) == n
	}).Viewers
}

// peerOf waits for a peer message that ok accepts.
func peerOf(t *testing.T, r *rtctest.Receiver, what string, ok func(api.PeerPointer) bool) api.PeerPointer {
	t.Helper()
	return *controlUntil(t, r, what, func(m api.ViewerControl) bool {
		return m.Type == api.ControlPeer && m.Peer != nil && ok(*m.Peer)
	}).Peer
}

// checkWho compares a who list with the names, roles and view-only flags
// wanted in order, and the viewer flagged you.
func checkWho(t *testing.T, whose string, got []api.PresenceViewer, want []api.PresenceViewer, you string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s who: %+v, want %+v", whose, got, want)
	}
	for i, g := range got {
		w := want[i]
		if g.Name != w.Name || g.Role != w.Role || g.ViewOnly != w.ViewOnly || g.Target != api.TargetScreen || g.ID == "" || g.You != (g.ID == you) {
			t.Fatalf("%s who [%d]: %+v, want %+v (you: %s)", whose, i, g, w, you)
		}
	}
}

// TestPresence: two people watch one screen through their relayed
// connections, alice (the owner) in full and bob (a viewer, view-only)
// scaled to half. Each is told who is there, itself flagged; alice's
// pointer over her video reaches bob with her session's id, in his
// frame's pixels, and bob's (view-only, his input channels closed)
// reaches her in hers. A viewer on the token shows as the owner and its
// leaving is told. A flood of peer messages reaches the others at most
// api.MaxPeerPerSecond, and where the pointer stopped arrives last.
func TestPresence(t *testing.T) {
	e := start(t, "640x480")
	aliceC, _ := e.asPrincipal(t, server.Principal{Person: "u-al", PersonName: "alice", Role: server.RoleOwner, Grant: "g-al", Via: server.ViaRelay})
	bobC, _ := e.asPrincipal(t, server.Principal{Person: "u-bo", PersonName: "bob", Role: server.RoleViewer, Grant: "g-bo", Via: server.ViaRelay})

	a, aAt := e.viewThrough(t, aliceC, api.PathStreamScreen)
	aID := path.Base(aAt)
	checkWho(t, "alice's first", whoOf(t, a, 1), []api.PresenceViewer{{Name: "alice", Role: "owner"}}, aID)

	b, bAt := e.viewThrough(t, bobC, api.PathStreamScreen+"?max_width=320")
	bID := path.Base(bAt)
	if !inputClosed(b) {
		t.Fatal("bob's (a viewer's) input channels stayed open")
	}
	both := []api.PresenceViewer{{Name: "alice", Role: "owner"}, {Name: "bob", Role: "viewer", ViewOnly: true}}
	checkWho(t, "bob's", whoOf(t, b, 2), both, bID)
	checkWho(t, "alice's second", whoOf(t, a, 2), both, aID)

	// alice's frame pixel (401, 301) is the target's; bob's frames are
	// half: (200, 150). Once his stream runs: its scale is known.
	b.NextFrame(t, true, frameTimeout)
	sendJSON(t, a, api.ChannelControl, api.ViewerControl{Type: api.ControlPeer, Peer: &api.PeerPointer{X: 401, Y: 301}})
	if p := peerOf(t, b, "alice's pointer", func(api.PeerPointer) bool { return true }); p != (api.PeerPointer{ID: aID, X: 200, Y: 150}) {
		t.Fatalf("bob was told %+v, want alice's session %s at (200, 150)", p, aID)
	}
	// bob's frame pixel (100, 50) covers the target's (200, 100)-(201, 101).
	sendJSON(t, b, api.ChannelControl, api.ViewerControl{Type: api.ControlPeer, Peer: &api.PeerPointer{X: 100, Y: 50}})
	if p := peerOf(t, a, "bob's pointer", func(api.PeerPointer) bool { return true }); p.ID != bID || p.Away || p.X < 200 || p.X > 201 || p.Y < 100 || p.Y > 101 {
		t.Fatalf("alice was told %+v, want bob's session %s at (200..201, 100..101)", p, bID)
	}
	sendJSON(t, b, api.ChannelControl, api.ViewerControl{Type: api.ControlPeer, Peer: &api.PeerPointer{Away: true}})
	if p := peerOf(t, a, "bob's pointer away", func(api.PeerPointer) bool { return true }); p != (api.PeerPointer{ID: bID, Away: true}) {
		t.Fatalf("alice was told %+v, want bob's session away", p)
	}

	t.Run("flood", func(t *testing.T) {
		const sent = 600
		began := time.Now()
		for x := range sent {
			sendJSON(t, a, api.ChannelControl, api.ViewerControl{Type: api.ControlPeer, Peer: &api.PeerPointer{X: x, Y: 10}})
		}
		got := 0
		last := -1
		peerOf(t, b, "the flood's last move", func(p api.PeerPointer) bool {
			got++
			if p.X < last {
				t.Errorf("moves out of order: %d after %d", p.X, last)
			}
			last = p.X
			return p.X == (sent-1)/2
		})
		elapsed := time.Since(began)
		// A bound, not a timing: however slow the machine, no more
		// than the rate over the time it took (and the burst) arrive.
		if most := int(float64(api.MaxPeerPerSecond)*(elapsed.Seconds()+1)) + 1; got > most {
			t.Fatalf("%d of %d moves sent reached bob in %s: want at most %d (%d a second)", got, sent, elapsed, most, api.MaxPeerPerSecond)
		}
		t.Logf("%d of %d moves reached bob in %s", got, sent, elapsed)
	})

	t.Run("owner's token joins and leaves", func(t *testing.T) {
		c, cAt := e.view(t, api.PathStreamScreen, e.d.Token, allChannels)
		three := append(slices.Clone(both), api.PresenceViewer{Name: api.PresenceOwnerName})
		checkWho(t, "the token's", whoOf(t, c, 3), three, path.Base(cAt))
		checkWho(t, "bob's third", whoOf(t, b, 3), three, bID)
		sessions, err := e.d.Client.StreamSessions(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, s := range sessions {
			names[s.Name] = s.Role
		}
		if len(sessions) != 3 || names["alice"] != "owner" || names["bob"] != "viewer" || names[api.PresenceOwnerName] != "" {
			t.Fatalf("sessions %+v: want alice (owner), bob (viewer) and the owner's token", sessions)
		}
		if code, err := rtctest.Delete(t.Context(), e.d.URL, cAt, e.d.Token); err != nil || code != 204 {
			t.Fatalf("DELETE the token's session: %d %v", code, err)
		}
		checkWho(t, "bob's after the token left", whoOf(t, b, 2), both, bID)
		checkWho(t, "alice's after the token left", whoOf(t, a, 2), both, aID)
	})
}
