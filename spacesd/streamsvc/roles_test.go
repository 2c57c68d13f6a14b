package streamsvc_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// asPrincipal is an HTTP client whose every connection the daemon serves
// as p's (what the relay service does with a relayed stream whose grant
// held), and the bearer it sends anyway (the token: ignored there).
func (e *env) asPrincipal(t *testing.T, p server.Principal) (*http.Client, *client.Client) {
	dial := func(context.Context, string, string) (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			if err := e.d.Server.ServeConn(a, p); err != nil {
				t.Errorf("ServeConn: %v", err)
			}
		}()
		return b, nil
	}
	c, err := client.New("http://relay", e.d.Token, client.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{DialContext: dial}}, c
}

// viewThrough offers to path through c with the token as bearer.
func (e *env) viewThrough(t *testing.T, c *http.Client, path string) (*rtctest.Receiver, string) {
	t.Helper()
	r := rtctest.New(t, allChannels)
	res, err := rtctest.PostVia(t.Context(), c, "http://relay"+path, e.d.Token, r.Offer)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusCreated {
		t.Fatalf("offer to %s: %d %+v", path, res.Status, res.Error)
	}
	r.Accept(t, res.Answer)
	return r, res.Location
}

// inputClosed waits for the daemon to close r's input and pointer
// channels (a view-only viewer's), or reports that they stayed open.
func inputClosed(r *rtctest.Receiver) bool {
	for _, label := range []string{api.ChannelInput, api.ChannelPointer} {
		select {
		case <-r.Closed[label]:
		case <-time.After(frameTimeout):
			return false
		}
	}
	return true
}

// A viewer's stream is view-only whatever it asks: its own offer through
// its connection (with the token on it, which a principal's connection
// ignores), and a ticket it mints asking for full control, used where it
// likes (here on the daemon's own port, as a link would through the
// relay). Its input channels are closed by the daemon, and the ticket
// says view_only. An editor's offer keeps its input: the check is by role.
func TestViewersStreamIsViewOnly(t *testing.T) {
	e := start(t, "320x240")
	viewer, vc := e.asPrincipal(t, server.Principal{Person: "u-vic", PersonName: "vic", Role: server.RoleViewer, Grant: "g-vic", Via: server.ViaRelay})
	editor, _ := e.asPrincipal(t, server.Principal{Person: "u-eda", PersonName: "eda", Role: server.RoleEditor, Grant: "g-eda", Via: server.ViaRelay})

	own, ownAt := e.viewThrough(t, viewer, api.PathStreamScreen)
	own.NextFrame(t, true, frameTimeout)
	if !inputClosed(own) {
		t.Fatal("a viewer's own offer kept its input channels")
	}

	tk, err := vc.StreamTicket(t.Context(), api.TicketRequest{ViewOnly: false})
	if err != nil {
		t.Fatalf("a viewer mints a ticket: %v", err)
	}
	if !tk.ViewOnly {
		t.Fatalf("a viewer's ticket answered view_only false: %+v", tk)
	}
	byTicket, _ := e.view(t, tk.OfferPath, tk.Ticket, allChannels)
	byTicket.NextFrame(t, true, frameTimeout)
	if !inputClosed(byTicket) {
		t.Fatal("a stream opened with a viewer's ticket kept its input channels")
	}

	full, fullAt := e.viewThrough(t, editor, api.PathStreamScreen)
	full.WaitOpen(t, api.ChannelInput, frameTimeout)
	select {
	case <-full.Closed[api.ChannelInput]:
		t.Fatal("an editor's input channel was closed")
	case <-time.After(500 * time.Millisecond):
	}
	sessions, err := e.d.Client.StreamSessions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	viewOnly := 0
	for _, s := range sessions {
		if s.ViewOnly {
			viewOnly++
		}
	}
	if len(sessions) != 3 || viewOnly != 2 {
		t.Fatalf("sessions %+v: want 3, 2 of them view-only", sessions)
	}

	// A viewer ends its own session, not the editor's.
	del := func(at string) int {
		req, _ := http.NewRequest(http.MethodDelete, "http://relay"+at, nil)
		resp, err := viewer.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := del(fullAt); code != http.StatusNotFound {
		t.Errorf("a viewer's DELETE of the editor's session: %d, want 404", code)
	}
	if code := del(ownAt); code != http.StatusNoContent {
		t.Errorf("a viewer's DELETE of its own session: %d, want 204", code)
	}
	if s, err := e.d.Client.StreamSessions(t.Context()); err != nil || len(s) != 2 {
		t.Errorf("after the viewer's DELETE: %d sessions (%v), want 2", len(s), err)
	}
}
