package streamsvc_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/spacesd/server"
)

// getSessions is GET /v1/stream/sessions through c with a bearer: the
// status, the body as sent, and the sessions it decodes to.
func getSessions(t *testing.T, c *http.Client, base, bearer string) (int, string, []api.StreamSession) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+api.PathStreamSessions, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var s api.StreamSessions
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &s); err != nil || s.Sessions == nil {
			t.Fatalf("GET %s: %s: %v (want a list, never null)", api.PathStreamSessions, b, err)
		}
	}
	return resp.StatusCode, string(b), s.Sessions
}

// sessionID is the id of a WHEP Location.
func sessionID(location string) string { return location[strings.LastIndex(location, "/")+1:] }

func findSession(ss []api.StreamSession, id string) (api.StreamSession, bool) {
	for _, s := range ss {
		if s.ID == id {
			return s, true
		}
	}
	return api.StreamSession{}, false
}

// TestStreamSessions: GET /v1/stream/sessions lists the live viewers to
// the token, each with the path its media took: a token's viewer on the
// Space's own port goes direct; a ticket's viewer through a media link
// with a real TURN server and ?ice=relay is listed with path turn (the
// path the receiver's own stats show). A ticket cannot list (on the
// Space's port or through a link), nor can a relayed role other than the
// owner; the listing never holds a ticket. A viewer deleted, or one whose
// peer connection closed, is no longer listed.
func TestStreamSessions(t *testing.T) {
	e := start(t, "320x240")
	srv := rtctest.StartTURN(t)
	ctx := t.Context()

	if code, body, ss := getSessions(t, http.DefaultClient, e.d.URL, e.d.Token); code != 200 || len(ss) != 0 {
		t.Fatalf("no viewer yet: %d %s", code, body)
	}

	direct, directLoc := e.view(t, api.PathStreamScreen, e.d.Token, rtctest.Options{Channels: []string{api.ChannelControl}})
	direct.NextFrame(t, true, frameTimeout)
	if sp := direct.WaitPath(t, frameTimeout); sp.Media != api.MediaDirect {
		t.Fatalf("the direct viewer's path message %+v", sp)
	}

	link := server.Principal{Person: "link", Role: server.RoleLink, Grant: "g-turn", Via: server.ViaRelay,
		ICEServers: srv.ICEServers("udp"), TURNTLS: srv.PinnedTLS()}
	lc := e.relayed(t, link)
	tk := e.ticket(t, api.TicketRequest{ViewOnly: true})
	turn := rtctest.New(t, rtctest.Options{Channels: []string{api.ChannelControl}, ICEServers: srv.ICEServers("udp"), RelayOnly: true})
	res, err := rtctest.PostVia(ctx, lc, "http://relay"+tk.OfferPath+"?"+api.StreamOptions{ICE: api.ICERelay}.Query(), tk.Ticket, turn.Offer)
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("relay-only offer through the link: %+v %v", res, err)
	}
	turn.Accept(t, res.Answer)
	turnLoc := res.Location
	turn.NextFrame(t, true, frameTimeout)
	turn.WaitPath(t, frameTimeout)

	var body string
	var ss []api.StreamSession
	eventually(t, "both viewers listed, connected, with their paths", func() bool {
		_, body, ss = getSessions(t, http.DefaultClient, e.d.URL, e.d.Token)
		d, ok1 := findSession(ss, sessionID(directLoc))
		r, ok2 := findSession(ss, sessionID(turnLoc))
		return len(ss) == 2 && ok1 && ok2 && d.Connected && r.Connected
	})
	d, _ := findSession(ss, sessionID(directLoc))
	if d.Target != api.TargetScreen || d.WindowID != 0 || d.ByTicket || d.ViewOnly || d.Path == nil || d.Path.Media != api.MediaDirect ||
		d.StartedAt.IsZero() {
		t.Errorf("the token's direct viewer listed as %+v (path %+v)", d, d.Path)
	}
	r, _ := findSession(ss, sessionID(turnLoc))
	pair, ok := turn.SelectedPair()
	if r.Target != api.TargetScreen || !r.ByTicket || !r.ViewOnly || r.Path == nil || r.Path.Media != api.MediaTURN ||
		!ok || (r.Path.Local != "relay" && r.Path.Remote != "relay") ||
		(pair.Local != webrtc.ICECandidateTypeRelay && pair.Remote != webrtc.ICECandidateTypeRelay) {
		t.Errorf("the ticket's relay-only viewer listed as %+v (path %+v), the receiver's pair %+v", r, r.Path, pair)
	}
	if !d.StartedAt.Before(r.StartedAt) || ss[0].ID != d.ID {
		t.Errorf("sessions not oldest first: %+v", ss)
	}
	if strings.Contains(body, tk.Ticket) || strings.Contains(body, "cuat1.") || strings.Contains(body, e.d.Token) {
		t.Errorf("the listing holds a ticket or the token: %s", body)
	}

	// Who may not list: a ticket on the Space's port (the route takes no
	// ticket), a ticket on a link's connection, and a relayed viewer role.
	if code, body, _ := getSessions(t, http.DefaultClient, e.d.URL, tk.Ticket); code != http.StatusUnauthorized {
		t.Errorf("a ticket listing on the Space's port: %d %s, want 401", code, body)
	}
	if code, body, _ := getSessions(t, lc, "http://relay", tk.Ticket); code != http.StatusUnauthorized {
		t.Errorf("a ticket listing through a link: %d %s, want 401", code, body)
	}
	viewer := e.relayed(t, server.Principal{Person: "bob", Role: server.RoleViewer, Grant: "g-bob", Via: server.ViaRelay})
	if code, body, _ := getSessions(t, viewer, "http://relay", ""); code != http.StatusForbidden {
		t.Errorf("a relayed viewer role listing: %d %s, want 403", code, body)
	}
	owner := e.relayed(t, server.Principal{Person: "alice", Role: server.RoleOwner, Grant: "g-alice", Via: server.ViaRelay})
	if code, body, ss := getSessions(t, owner, "http://relay", ""); code != 200 || len(ss) != 2 {
		t.Errorf("the relayed owner listing: %d %s, want both viewers", code, body)
	}

	// Gone: the TURN viewer deleted through its link, the direct one by
	// closing its own peer connection.
	if st, err := rtctest.DeleteVia(ctx, lc, "http://relay", turnLoc, tk.Ticket); err != nil || st != http.StatusNoContent {
		t.Fatalf("DELETE the TURN viewer: %d %v", st, err)
	}
	eventually(t, "the deleted viewer is no longer listed", func() bool {
		_, _, ss := getSessions(t, http.DefaultClient, e.d.URL, e.d.Token)
		_, listed := findSession(ss, sessionID(turnLoc))
		return !listed && len(ss) == 1
	})
	if err := direct.PC.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the viewer that closed is no longer listed", func() bool {
		_, _, ss := getSessions(t, http.DefaultClient, e.d.URL, e.d.Token)
		return len(ss) == 0
	})
}
