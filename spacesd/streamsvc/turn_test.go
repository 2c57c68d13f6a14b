package streamsvc_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// relayed is a client whose every connection the daemon serves as p's,
// handed over as relaysvc hands over a relayed stream (ServeConn).
func (e *env) relayed(t *testing.T, p server.Principal) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, _, _ string) (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			if err := e.d.Server.ServeConn(a, p); err != nil {
				t.Errorf("ServeConn: %v", err)
			}
		}()
		return b, nil
	}}}
}

// getICE is GET /v1/stream/ice through c with a bearer: the status and
// the body as sent.
func getICE(t *testing.T, c *http.Client, base, bearer string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+api.PathStreamICE, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestICEOnTheSpacesOwnPort: a Space reached on its own port adds no ICE
// server (an empty list, not null) to the token or a ticket, and refuses
// ?ice=relay, which only a stream through the relay can take.
func TestICEOnTheSpacesOwnPort(t *testing.T) {
	e := start(t, "320x240")
	tk := e.ticket(t, api.TicketRequest{})
	for _, bearer := range []string{e.d.Token, tk.Ticket} {
		if code, body := getICE(t, http.DefaultClient, e.d.URL, bearer); code != 200 || strings.TrimSpace(body) != `{"ice_servers":[]}` {
			t.Fatalf("GET %s: %d %s, want an empty list", api.PathStreamICE, code, body)
		}
	}
	if code, _ := getICE(t, http.DefaultClient, e.d.URL, ""); code != http.StatusUnauthorized {
		t.Fatalf("GET %s with nothing: %d, want 401", api.PathStreamICE, code)
	}
	r := rtctest.New(t, rtctest.Options{})
	res, err := rtctest.Post(t.Context(), e.d.URL+tk.OfferPath+"?ice=relay", tk.Ticket, r.Offer)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusBadRequest || res.Error == nil || res.Error.Kind != api.KindInvalidArgument || !strings.Contains(res.Error.Message, "TURN server") {
		t.Fatalf("?ice=relay on the Space's own port: %d %+v, want invalid_argument naming the TURN server", res.Status, res.Error)
	}
}

// TestStreamThroughTURN: a media link's viewer whose connection brings a
// real TURN server's credential (as relaysvc makes it from the grant)
// gets that server from GET /v1/stream/ice, goes direct by default, and
// with ?ice=relay (and a receiver that gathers relayed candidates only)
// gets decoded frames through the TURN server, over UDP, TCP and TLS:
// the receiver's stats show a relayed pair, the daemon's path message
// says turn, and the gauge counts the viewer until its session ends.
func TestStreamThroughTURN(t *testing.T) {
	e := start(t, "320x240")
	srv := rtctest.StartTURN(t)
	cases := []struct {
		name             string
		daemon, receiver string
		relayOnly        bool
		media            string
	}{
		{"direct first", "udp", "udp", false, api.MediaDirect},
		{"turn over udp", "udp", "udp", true, api.MediaTURN},
		{"turn over tcp", "tcp", "tcp", true, api.MediaTURN},
		{"turn over tls", "tls", "tcp", true, api.MediaTURN},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			link := server.Principal{Person: "link", Role: server.RoleLink, Grant: "g-" + tc.daemon, Via: server.ViaRelay,
				ICEServers: srv.ICEServers(tc.daemon), TURNTLS: srv.PinnedTLS()}
			c := e.relayed(t, link)
			tk := e.ticket(t, api.TicketRequest{})
			code, body := getICE(t, c, "http://relay", tk.Ticket)
			var got api.StreamICE
			if code != 200 || json.Unmarshal([]byte(body), &got) != nil || !reflect.DeepEqual(got.ICEServers, link.ICEServers) {
				t.Fatalf("GET %s through the link: %d %s, want %+v", api.PathStreamICE, code, body, link.ICEServers)
			}
			r := rtctest.New(t, rtctest.Options{Channels: []string{api.ChannelControl}, ICEServers: srv.ICEServers(tc.receiver), RelayOnly: tc.relayOnly})
			path := tk.OfferPath
			if tc.relayOnly {
				path += "?" + api.StreamOptions{ICE: api.ICERelay}.Query()
			}
			res, err := rtctest.PostVia(t.Context(), c, "http://relay"+path, tk.Ticket, r.Offer)
			if err != nil || res.Status != http.StatusCreated {
				t.Fatalf("offer through the link: %d %+v %v", res.Status, res.Error, err)
			}
			r.Accept(t, res.Answer)
			img := decodeKey(t, r.NextFrame(t, true, frameTimeout))
			if img.Bounds().Dx() != 320 || img.Bounds().Dy() != 240 {
				t.Fatalf("keyframe of %v", img.Bounds())
			}
			sp := r.WaitPath(t, frameTimeout)
			pair, ok := r.SelectedPair()
			if !ok {
				t.Fatal("the receiver's stats show no selected pair")
			}
			relayed := pair.Local == webrtc.ICECandidateTypeRelay || pair.Remote == webrtc.ICECandidateTypeRelay
			if sp.Media != tc.media || relayed != (tc.media == api.MediaTURN) {
				t.Fatalf("path message %+v, receiver's pair %+v: want media %s", sp, pair, tc.media)
			}
			want := int64(0)
			if tc.media == api.MediaTURN {
				want = 1
			}
			if n := e.metric(t, streamsvc.MetricViewersTURN); n != want {
				t.Fatalf("%s = %d, want %d", streamsvc.MetricViewersTURN, n, want)
			}
			if st, err := rtctest.DeleteVia(t.Context(), c, "http://relay", res.Location, tk.Ticket); err != nil || st != http.StatusNoContent {
				t.Fatalf("DELETE through the link: %d %v", st, err)
			}
			eventually(t, "the viewer left", func() bool {
				return e.metric(t, streamsvc.MetricViewers) == 0 && e.metric(t, streamsvc.MetricViewersTURN) == 0
			})
		})
	}
}
