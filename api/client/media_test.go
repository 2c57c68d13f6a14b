package client_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// StreamEndpoint of a Space reached on its own port: route direct, the ICE
// servers' URL beside the offer's, and StreamICE with the ticket as the
// bearer (not the client's token: a client whose token is wrong gets them
// all the same) answers none. A wrong ticket is refused.
//
// It needs the daemon's GET /v1/stream/ice (spacesd/streamsvc).
func TestStreamEndpointDirect(t *testing.T) {
	_, d := spacesdtest.StartDesktop(t, "640x480", api.FeatureDesktopStream)
	ep, err := d.Client.StreamEndpoint(t.Context(), api.TicketRequest{ViewOnly: true}, api.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Route != api.RouteDirect || ep.ICEURL != d.URL+api.PathStreamICE || ep.OfferURL != d.URL+api.PathStreamScreen ||
		!strings.HasPrefix(ep.ViewerURL, d.URL+api.PathViewer+"#") {
		t.Fatalf("endpoint %+v: want route direct and the daemon's own URLs", ep)
	}
	other, err := client.New(d.URL, "not-the-token")
	if err != nil {
		t.Fatal(err)
	}
	ice, err := other.StreamICE(t.Context(), ep.Ticket)
	if err != nil || len(ice.ICEServers) != 0 {
		t.Fatalf("StreamICE with the ticket: %+v, %v; want an empty list", ice, err)
	}
	if _, err := d.Client.StreamICE(t.Context(), ep.Ticket+"x"); api.KindOf(err) != api.KindUnauthenticated {
		t.Fatalf("StreamICE with a damaged ticket: %v, want unauthenticated", err)
	}
}

// StreamEndpoint of a Space reached under a relay's /c/<computer> (here a
// plain reverse proxy stands for the relay's prefix; test/relay runs the
// real one): route relay, and every URL of the answer under that prefix.
func TestStreamEndpointUnderRelayPrefix(t *testing.T) {
	_, d := spacesdtest.StartDesktop(t, "640x480", api.FeatureDesktopStream)
	target, _ := url.Parse(d.URL)
	prefix := api.PrefixRelayComputer + "box"
	front := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, prefix)
		pr.Out.URL.RawPath = ""
	}})
	t.Cleanup(front.Close)
	c, err := client.New(front.URL+prefix, d.Token)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := c.StreamEndpoint(t.Context(), api.TicketRequest{}, api.StreamOptions{MaxFPS: 15})
	if err != nil {
		t.Fatal(err)
	}
	base := front.URL + prefix
	if ep.Route != api.RouteRelay || ep.ICEURL != base+api.PathStreamICE || ep.OfferURL != base+api.PathStreamScreen+"?max_fps=15" {
		t.Fatalf("endpoint %+v: want route relay and URLs under %s", ep, base)
	}
	page, fragment, _ := strings.Cut(ep.ViewerURL, "#")
	q, _ := url.ParseQuery(fragment)
	if page != base+api.PathViewer || q.Get("offer") != ep.OfferURL || q.Get("ticket") != ep.Ticket || strings.Contains(ep.ViewerURL, d.Token) {
		t.Fatalf("viewer URL %q: want %s%s#ticket=...&offer=%s, no token", ep.ViewerURL, base, api.PathViewer, ep.OfferURL)
	}
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", page, resp.Status)
	}
}

// StreamSessions lists a live viewer (a real pion peer on the token)
// with its target and, once connected, its path: direct on the Space's
// own port. A client whose bearer is a ticket cannot list. The viewer
// deleted, it is gone.
func TestStreamSessions(t *testing.T) {
	vp8test.Require(t)
	_, d := spacesdtest.StartDesktop(t, "320x240", api.FeatureDesktopStream)
	ctx := t.Context()
	if ss, err := d.Client.StreamSessions(ctx); err != nil || len(ss) != 0 {
		t.Fatalf("no viewer yet: %+v, %v", ss, err)
	}
	tk, err := d.Client.StreamTicket(ctx, api.TicketRequest{})
	if err != nil {
		t.Fatal(err)
	}
	r := rtctest.New(t, rtctest.Options{})
	res, err := rtctest.Post(ctx, d.URL+api.PathStreamScreen, tk.Ticket, r.Offer)
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("offer: %+v, %v", res, err)
	}
	r.Accept(t, res.Answer)
	r.NextFrame(t, true, desktoptest.EventTimeout)
	var ss []api.StreamSession
	desktoptest.Eventually(t, "the viewer listed, connected", func() bool {
		ss, err = d.Client.StreamSessions(ctx)
		return err == nil && len(ss) == 1 && ss[0].Connected
	})
	if s := ss[0]; !strings.HasSuffix(res.Location, "/"+s.ID) || s.Target != api.TargetScreen || !s.ByTicket || s.Path == nil || s.Path.Media != api.MediaDirect {
		t.Fatalf("listed %+v (path %+v), want the ticket's screen viewer of %s, direct", s, s.Path, res.Location)
	}
	withTicket, err := client.New(d.URL, tk.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withTicket.StreamSessions(ctx); api.KindOf(err) != api.KindUnauthenticated {
		t.Fatalf("StreamSessions with a ticket: %v, want unauthenticated", err)
	}
	if st, err := rtctest.Delete(ctx, d.URL, res.Location, d.Token); err != nil || st != http.StatusNoContent {
		t.Fatalf("DELETE: %d %v", st, err)
	}
	desktoptest.Eventually(t, "the deleted viewer is gone", func() bool {
		ss, err = d.Client.StreamSessions(ctx)
		return err == nil && len(ss) == 0
	})
}
