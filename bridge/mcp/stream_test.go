package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestStreamTools: stream_endpoint answers an absolute offer URL and a
// ticket that a WebRTC viewer uses as they are (frames arrive), and a
// viewer URL that carries the ticket in its fragment only;
// stream_space_window finds a window by its title, and a view-only
// ticket is view-only at the Space.
func TestStreamTools(t *testing.T) {
	vp8test.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	e := newEnvWith(t, envOptions{daemon: spacesdtest.Options{Display: display}})
	cs := e.client(t, nil)
	if _, err := e.daemon.Client.Capabilities(t.Context()); err != nil { // connect before the test client
		t.Fatal(err)
	}

	var ep api.StreamEndpoint
	structured(t, call(t, cs, "stream_endpoint", map[string]any{"space": "s1", "max_fps": 15, "ticket_ttl": 30}), &ep)
	if ep.OfferURL != e.daemon.URL+api.PathStreamScreen+"?max_fps=15" || ep.Codec != "vp8" || ep.FrameSize != (api.Size{Width: 640, Height: 480}) || ep.ViewOnly ||
		ep.Route != api.RouteDirect || ep.ICEURL != e.daemon.URL+api.PathStreamICE {
		t.Fatalf("stream_endpoint answered %+v", ep)
	}
	if d := time.Until(ep.TicketExpiresAt); d < 20*time.Second || d > 31*time.Second {
		t.Fatalf("ticket expires in %v, want about 30 s", d)
	}
	page, fragment, _ := strings.Cut(ep.ViewerURL, "#")
	frag, _ := url.ParseQuery(fragment)
	if page != e.daemon.URL+api.PathViewer || frag.Get("ticket") != ep.Ticket || frag.Get("offer") != ep.OfferURL || strings.Contains(page, ep.Ticket) {
		t.Fatalf("viewer URL %q", ep.ViewerURL)
	}
	r := rtctest.New(t, rtctest.Options{})
	res, err := rtctest.Post(t.Context(), ep.OfferURL, ep.Ticket, r.Offer)
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("offer to %s: %+v, %v", ep.OfferURL, res, err)
	}
	r.Accept(t, res.Answer)
	if f := r.NextFrame(t, true, desktoptest.EventTimeout); f.Width != 640 {
		t.Fatalf("keyframe %dx%d", f.Width, f.Height)
	}

	// The live viewer is in the next answer, with the path its media
	// took (direct: the daemon's own port), and in its text.
	if len(ep.Viewers) != 0 {
		t.Fatalf("viewers before any: %+v", ep.Viewers)
	}
	var again api.StreamEndpoint
	var againText string
	desktoptest.Eventually(t, "stream_endpoint lists the live viewer with its path", func() bool {
		res := call(t, cs, "stream_endpoint", map[string]any{"space": "s1"})
		structured(t, res, &again)
		againText = text(res)
		return len(again.Viewers) == 1 && again.Viewers[0].Path != nil
	})
	if v := again.Viewers[0]; !strings.HasSuffix(res.Location, "/"+v.ID) || v.Target != api.TargetScreen || !v.ByTicket || !v.Connected ||
		v.Path.Media != api.MediaDirect || !strings.Contains(againText, "viewers: 1 live: owner "+v.ID[:8]+" by ticket: direct") {
		t.Fatalf("stream_endpoint's viewers %+v (path %+v), text %q", again.Viewers, v.Path, againText)
	}

	// A smaller stream: the frame size is the scaled one, and the offer
	// URL asks for it.
	var small api.StreamEndpoint
	structured(t, call(t, cs, "stream_endpoint", map[string]any{"space": "s1", "max_width": 320, "max_height": 400}), &small)
	if small.OfferURL != e.daemon.URL+api.PathStreamScreen+"?max_height=400&max_width=320" || small.FrameSize != (api.Size{Width: 320, Height: 240}) {
		t.Fatalf("stream_endpoint with max_width 320 answered %+v", small)
	}
	sr := rtctest.New(t, rtctest.Options{})
	if res, err := rtctest.Post(t.Context(), small.OfferURL, small.Ticket, sr.Offer); err != nil || res.Status != http.StatusCreated {
		t.Fatalf("offer to %s: %+v, %v", small.OfferURL, res, err)
	} else {
		sr.Accept(t, res.Answer)
	}
	if f := sr.NextFrame(t, true, desktoptest.EventTimeout); f.Width != 320 || f.Height != 240 {
		t.Fatalf("keyframe of the smaller stream %dx%d, want 320x240", f.Width, f.Height)
	}
	if r := call(t, cs, "stream_endpoint", map[string]any{"space": "s1", "max_width": 8}); !r.IsError {
		t.Fatalf("stream_endpoint took max_width 8")
	}

	title := desktoptest.RandomWord(t)
	desktoptest.NewXClient(t, display, title, 120, 80, []desktoptest.Fill{{W: 120, H: 80, RGB: 0x00ff00}})
	var win api.StreamEndpoint
	desktoptest.Eventually(t, "stream_space_window finds the window", func() bool {
		r := call(t, cs, "stream_space_window", map[string]any{"space": "s1", "title": title, "view_only": true})
		if r.IsError {
			return false
		}
		structured(t, r, &win)
		return true
	})
	if win.WindowID == 0 || !win.ViewOnly || win.FrameSize != (api.Size{Width: 120, Height: 80}) || !strings.Contains(win.OfferURL, "/v1/stream/windows/") {
		t.Fatalf("stream_space_window answered %+v", win)
	}
	vr := rtctest.New(t, rtctest.Options{Channels: []string{api.ChannelInput}})
	if res, err := rtctest.Post(t.Context(), win.OfferURL, win.Ticket, vr.Offer); err != nil || res.Status != http.StatusCreated {
		t.Fatalf("offer to the window: %+v, %v", res, err)
	} else {
		vr.Accept(t, res.Answer)
	}
	select {
	case <-vr.Closed[api.ChannelInput]:
	case <-time.After(desktoptest.EventTimeout):
		t.Fatal("the view-only ticket's input channel stayed open")
	}
	// The window's answer lists the window's viewer only, not the
	// screen's two.
	desktoptest.Eventually(t, "stream_space_window lists the window's viewer", func() bool {
		var w api.StreamEndpoint
		structured(t, call(t, cs, "stream_space_window", map[string]any{"space": "s1", "title": title}), &w)
		return len(w.Viewers) == 1 && w.Viewers[0].Target == api.StreamTarget(win.WindowID) && w.Viewers[0].WindowID == win.WindowID && w.Viewers[0].ViewOnly
	})
	if r := call(t, cs, "stream_space_window", map[string]any{"space": "s1", "title": "no-such-window-title"}); errKind(t, r) != string(api.KindNotFound) {
		t.Fatalf("a title nothing has: %s", text(r))
	}
}

// TestStreamToolsOnRelaySpace: on a relay:<computer>, stream_endpoint and
// stream_space_window answer route relay and links under the relay's
// /c/<computer>/ (the page, the offer, the ICE servers' URL) that carry
// the stream's ticket and never the user's relay token; the text says the
// route. The stand-in relay forwards only the user's token, so the ticket
// is tried at the Space itself (test/relay opens it through the relay).
func TestStreamToolsOnRelaySpace(t *testing.T) {
	vp8test.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	e := newEnvWith(t, envOptions{daemon: spacesdtest.Options{Display: display}})
	cs := e.client(t, nil)
	if _, err := e.daemon.Client.Capabilities(t.Context()); err != nil { // connect before the test client
		t.Fatal(err)
	}
	r, tok := loginRelay(t, e)
	r.Attach("alice", "box", e.daemon.URL, e.daemon.Token)
	base := r.URL + api.PrefixRelayComputer + "box"

	res := call(t, cs, "stream_endpoint", map[string]any{"space": "relay:box", "view_only": true})
	var ep api.StreamEndpoint
	structured(t, res, &ep)
	page, fragment, _ := strings.Cut(ep.ViewerURL, "#")
	frag, _ := url.ParseQuery(fragment)
	if res.IsError || ep.Route != api.RouteRelay || ep.ICEURL != base+api.PathStreamICE || ep.OfferURL != base+api.PathStreamScreen ||
		page != base+api.PathViewer || frag.Get("ticket") != ep.Ticket || frag.Get("offer") != ep.OfferURL {
		t.Fatalf("stream_endpoint on relay:box answered %+v", ep)
	}
	if txt := text(res); !strings.Contains(txt, "route: through the relay") || !strings.Contains(txt, ep.ICEURL) || strings.Contains(txt, tok) ||
		strings.Contains(ep.ViewerURL, tok) || strings.Contains(ep.ViewerURL, e.daemon.Token) {
		t.Fatalf("stream_endpoint on relay:box: %s", txt)
	}
	rc := rtctest.New(t, rtctest.Options{})
	if offer, err := rtctest.Post(t.Context(), e.daemon.URL+api.PathStreamScreen, ep.Ticket, rc.Offer); err != nil || offer.Status != http.StatusCreated {
		t.Fatalf("the ticket's offer at the Space: %+v, %v", offer, err)
	} else {
		rc.Accept(t, offer.Answer)
	}
	// The owner's listing reaches the Space through the relay: the live
	// viewer is in the next answer, with its path once connected.
	desktoptest.Eventually(t, "stream_endpoint on relay:box lists the live viewer", func() bool {
		var again api.StreamEndpoint
		structured(t, call(t, cs, "stream_endpoint", map[string]any{"space": "relay:box"}), &again)
		return len(again.Viewers) == 1 && again.Viewers[0].Path != nil && again.Viewers[0].Path.Media == api.MediaDirect
	})

	title := desktoptest.RandomWord(t)
	desktoptest.NewXClient(t, display, title, 120, 80, []desktoptest.Fill{{W: 120, H: 80, RGB: 0x0000ff}})
	var win api.StreamEndpoint
	desktoptest.Eventually(t, "stream_space_window finds the window through the relay", func() bool {
		r := call(t, cs, "stream_space_window", map[string]any{"space": "relay:box", "title": title})
		if r.IsError {
			return false
		}
		structured(t, r, &win)
		return true
	})
	if win.Route != api.RouteRelay || !strings.HasPrefix(win.OfferURL, base+"/v1/stream/windows/") || !strings.HasPrefix(win.ViewerURL, base+api.PathViewer+"#") {
		t.Fatalf("stream_space_window on relay:box answered %+v", win)
	}
}

// TestStreamToolsOlderDaemon: a daemon that cannot list its viewers (an
// older one, whose GET /v1/stream/sessions is 404; here a proxy in front
// of a real daemon answers so) still answers stream_endpoint, with no
// viewers, while a viewer is live.
func TestStreamToolsOlderDaemon(t *testing.T) {
	vp8test.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "320x240"})
	e := newEnvWith(t, envOptions{daemon: spacesdtest.Options{Display: display}})
	cs := e.client(t, nil)
	target, _ := url.Parse(e.daemon.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Int64
	older := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.PathStreamSessions {
			refused.Add(1)
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(older.Close)
	if r := call(t, cs, "add_space", map[string]any{"url": older.URL, "token": e.daemon.Token, "name": "old"}); r.IsError {
		t.Fatalf("add_space: %s", text(r))
	}
	tk, err := e.daemon.Client.StreamTicket(t.Context(), api.TicketRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rc := rtctest.New(t, rtctest.Options{})
	res, err := rtctest.Post(t.Context(), e.daemon.URL+tk.OfferPath, tk.Ticket, rc.Offer)
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("offer: %+v, %v", res, err)
	}
	rc.Accept(t, res.Answer)
	rc.NextFrame(t, true, desktoptest.EventTimeout)
	r := call(t, cs, "stream_endpoint", map[string]any{"space": "old"})
	var ep api.StreamEndpoint
	structured(t, r, &ep)
	if r.IsError || ep.Ticket == "" || len(ep.Viewers) != 0 || refused.Load() == 0 || !strings.Contains(text(r), "viewers: none live") {
		t.Fatalf("stream_endpoint on a daemon that cannot list its viewers (asked %d times): %+v, %s", refused.Load(), ep, text(r))
	}
	if vs, err := e.daemon.Client.StreamSessions(t.Context()); err != nil || len(vs) != 1 {
		t.Fatalf("the daemon itself lists %+v, %v: want the live viewer", vs, err)
	}
}
