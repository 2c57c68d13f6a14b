package relaysvc_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// kickBound is how soon a kick must end what the person holds (DESIGN §4:
// unshare cuts within 500 ms).
const kickBound = 500 * time.Millisecond

// person is a relayed caller of a role: its API client, and an HTTP
// client (for WHEP) whose connections are relayed streams of its grant.
type person struct {
	api  *client.Client
	http *http.Client
}

func relayedPerson(t *testing.T, relay *standIn, rs *relaySession, id string, role protocol.Role) person {
	dial := func(context.Context, string, string) (net.Conn, error) {
		return rs.open(t, relay.grant(t, id, nil, func(g *protocol.Grant) { g.Role = role })), nil
	}
	c, err := client.New("http://relay.example", "", client.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	return person{api: c, http: &http.Client{Transport: &http.Transport{DialContext: dial}}}
}

var controlOnly = rtctest.Options{Channels: []string{api.ChannelControl}}

// view offers to url through c with bearer and waits for a keyframe.
func view(t *testing.T, c *http.Client, url, bearer string) *rtctest.Receiver {
	t.Helper()
	r := rtctest.New(t, controlOnly)
	res, err := rtctest.PostVia(t.Context(), c, url, bearer, r.Offer)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusCreated {
		t.Fatalf("offer to %s: %d %+v", url, res.Status, res.Error)
	}
	r.Accept(t, res.Answer)
	r.NextFrame(t, true, desktoptest.EventTimeout)
	return r
}

// A kick of a person ends, within kickBound, their live PTY WebSocket,
// the stream they opened on their connection, and the stream opened
// (on the daemon's own port, as a link would) with a ticket they minted
// through the relay; another person's stream lives on, and bob's ticket
// opens nothing more. KickAll then ends every non-owner's, not the
// owner's.
func TestKickEndsPTYAndStreams(t *testing.T) {
	t.Parallel()
	vp8test.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "320x240"})
	relay := newStandIn(t)
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display})
	attach(t, d, relay)
	rs := relay.next(t)
	bob := relayedPerson(t, relay, rs, "u-bob", protocol.RoleEditor)
	alice := relayedPerson(t, relay, rs, "u-alice", protocol.RoleViewer)
	owner := relayedPerson(t, relay, rs, "u-owner", protocol.RoleOwner)
	ctx := t.Context()

	info, err := bob.api.Start(ctx, api.StartRequest{Command: api.Command{Shell: "cat"}, PTY: &api.PTYSize{Cols: 80, Rows: 24}})
	if err != nil {
		t.Fatal(err)
	}
	pty, err := bob.api.StreamProcess(ctx, info.ID, 0, 0)
	if err != nil {
		t.Fatalf("bob's PTY stream: %v", err)
	}
	defer pty.Close()
	ptyEnded := make(chan time.Time, 1)
	go func() {
		for {
			if _, err := pty.Next(); err != nil {
				ptyEnded <- time.Now()
				return
			}
		}
	}()
	own := view(t, bob.http, "http://relay"+api.PathStreamScreen, "")
	tk, err := bob.api.StreamTicket(ctx, api.TicketRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byTicket := view(t, http.DefaultClient, d.URL+tk.OfferPath, tk.Ticket)
	view(t, alice.http, "http://relay"+api.PathStreamScreen, "")
	owners := view(t, owner.http, "http://relay"+api.PathStreamScreen, "")
	live := func() int {
		s, err := d.Client.StreamSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(s)
	}
	if n := live(); n != 4 {
		t.Fatalf("%d live viewers before the kick, want 4", n)
	}

	// untilLive polls the daemon's list of viewers until n are left and
	// answers when.
	untilLive := func(n int) time.Time {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if live() == n {
				return time.Now()
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("never down to %d viewers", n)
		return time.Time{}
	}
	t0 := time.Now()
	rs.send(t, protocol.Kick{Person: "u-bob", Reason: protocol.CloseKicked, Message: "unshared"})
	streams := untilLive(2).Sub(t0)
	var pty0 time.Duration
	select {
	case at := <-ptyEnded:
		pty0 = at.Sub(t0)
	case <-time.After(time.Minute):
		t.Fatal("bob's PTY stream lived on after the kick")
	}
	t.Logf("kick to end: streams %v, PTY %v", streams, pty0)
	if streams > kickBound || pty0 > kickBound {
		t.Errorf("the kick took %v (streams) and %v (PTY), over %v", streams, pty0, kickBound)
	}
	for name, r := range map[string]*rtctest.Receiver{"bob's own": own, "bob's ticket's": byTicket} {
		select {
		case <-r.Closed[api.ChannelControl]:
		case <-time.After(desktoptest.EventTimeout):
			t.Errorf("%s stream's control channel is still %s", name, r.Channels[api.ChannelControl].ReadyState())
		}
	}
	// The ticket bob minted opens nothing more: it outlives no kick.
	res, err := rtctest.Post(ctx, d.URL+tk.OfferPath, tk.Ticket, rtctest.New(t, controlOnly).Offer)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusForbidden || res.Error == nil || res.Error.Kind != api.KindPermissionDenied {
		t.Errorf("bob's ticket after the kick: %d %+v, want permission_denied", res.Status, res.Error)
	}

	t0 = time.Now()
	rs.send(t, protocol.Kick{Person: protocol.KickAll, Reason: protocol.CloseKicked})
	if all := untilLive(1).Sub(t0); all > kickBound {
		t.Errorf("KickAll took %v, over %v", all, kickBound)
	}
	select {
	case <-owners.Closed[api.ChannelControl]:
		t.Error("KickAll ended the owner's stream")
	case <-time.After(200 * time.Millisecond):
	}
}
