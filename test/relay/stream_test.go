package relay_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
)

// frameTimeout bounds a wait for a decoded frame: a liveness bound for a
// loaded 2-core CI machine, not a performance figure.
const frameTimeout = 30 * time.Second

// viewerTLS trusts the relay as a browser of the test would: its CA.
func (w *world) viewerTLS(t testing.TB) *tls.Config { return caTLS(t, w.caFile) }

// caTLS trusts the CA in caFile alone.
func caTLS(t testing.TB, caFile string) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("the test CA's PEM holds no certificate")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// viewerClient is an HTTP client of a viewer that holds only a link: no
// relay token, the relay trusted by its CA, dialling with dial (nil: the
// test's own network).
func (w *world) viewerClient(t testing.TB, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	tr := &http.Transport{TLSClientConfig: w.viewerTLS(t), DialContext: dial}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: frameTimeout}
}

// streamEndpoint asks the owner's bridge for a link to the screen of a
// relay:<computer>, as stream_endpoint answers it.
func (b *bridge) streamEndpoint(t testing.TB, space string, args map[string]any) api.StreamEndpoint {
	t.Helper()
	a := map[string]any{"space": space}
	for k, v := range args {
		a[k] = v
	}
	var ep api.StreamEndpoint
	b.call(t, "stream_endpoint", a, &ep)
	return ep
}

// iceServers asks the ICE servers of a link (GET ice_url with its ticket),
// as the viewer page does before it offers.
func iceServers(t testing.TB, c *http.Client, iceURL, ticket string) ([]api.ICEServer, int) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, iceURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ticket)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", iceURL, err)
	}
	defer resp.Body.Close()
	var ice api.StreamICE
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&ice); err != nil {
			t.Fatalf("GET %s: %v", iceURL, err)
		}
	}
	return ice.ICEServers, resp.StatusCode
}

// onlyTransport keeps the URLs of servers that reach TURN over one
// transport: "udp", "tcp" (turn:) or "tls" (turns:).
func onlyTransport(servers []api.ICEServer, transport string) []api.ICEServer {
	var out []api.ICEServer
	for _, s := range servers {
		keep := s
		keep.URLs = nil
		for _, u := range s.URLs {
			tls := strings.HasPrefix(u, "turns:")
			switch {
			case transport == "tls" && tls,
				transport == "udp" && !tls && strings.HasSuffix(u, "transport=udp"),
				transport == "tcp" && !tls && strings.HasSuffix(u, "transport=tcp"):
				keep.URLs = append(keep.URLs, u)
			}
		}
		if len(keep.URLs) > 0 {
			out = append(out, keep)
		}
	}
	return out
}

// withQuery adds key=value to a URL's query.
func withQuery(t testing.TB, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// watch opens a viewer of a link with the receiver's options, and waits
// for a decoded keyframe and the Space's path message. It answers the
// path and the receiver's own selected pair.
func watch(t *testing.T, c *http.Client, offerURL, ticket string, o rtctest.Options) (api.StreamPath, rtctest.Pair) {
	t.Helper()
	o.Channels = append(o.Channels, api.ChannelControl)
	r := rtctest.New(t, o)
	res, err := rtctest.PostVia(t.Context(), c, offerURL, ticket, r.Offer)
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("offer to %s: %+v, %v", offerURL, res, err)
	}
	if !strings.HasPrefix(res.Location, "/c/") {
		t.Fatalf("the WHEP session's Location %q is not under the relay's /c/<computer>/", res.Location)
	}
	r.Accept(t, res.Answer)
	f := r.NextFrame(t, true, frameTimeout)
	dec, err := vp8.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	if img, err := dec.Decode(f.Data); err != nil || img == nil || img.Bounds().Dx() != 640 {
		t.Fatalf("the keyframe through the relay (%d bytes) does not decode to the 640-pixel screen: %v", len(f.Data), err)
	}
	path := r.WaitPath(t, frameTimeout)
	pair, ok := r.SelectedPair()
	if !ok {
		t.Fatal("frames arrived, and the receiver's stats show no selected candidate pair")
	}
	u, _ := url.Parse(offerURL)
	if code, err := rtctest.DeleteVia(t.Context(), c, u.Scheme+"://"+u.Host, res.Location, ticket); err != nil || code != http.StatusOK && code != http.StatusNoContent {
		t.Fatalf("DELETE %s: %d, %v", res.Location, code, err)
	}
	return path, pair
}

// TestStreamThroughRelay: the owner's link to a relay:<computer> carries
// only a media ticket, opens from anywhere the relay is reached, and its
// stream takes the direct path when there is one and the relay's TURN
// (over UDP, TCP and TLS) when the Space's own addresses are filtered out
// on both ends. A link whose ticket expired, or that another computer
// minted, is refused by the Space.
func TestStreamThroughRelay(t *testing.T) {
	desktoptest.Require(t)
	vp8test.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	desktoptest.NewXClient(t, display, desktoptest.RandomWord(t), 200, 150, []desktoptest.Fill{{W: 200, H: 150, RGB: 0x3366cc}})
	w := newWorld(t)
	aliceToken := w.user("alice")
	alice := newBridge(t, w, aliceToken)
	s := startSpace(t, display)
	alice.addSpace(t, "box", s)
	alice.register(t, "box")
	s.waitConnected(t, 0)

	ep := alice.streamEndpoint(t, "relay:box", map[string]any{"ticket_ttl": 600})
	prefix := w.relayURL() + "/c/box/"
	if ep.Route != api.RouteRelay || !strings.HasPrefix(ep.OfferURL, prefix) || !strings.HasPrefix(ep.ViewerURL, prefix+"viewer/") ||
		!strings.HasPrefix(ep.ICEURL, prefix) {
		t.Fatalf("stream_endpoint of relay:box: %+v, want route relay and links under %s", ep, prefix)
	}
	if strings.Contains(ep.ViewerURL, aliceToken) || strings.Contains(ep.OfferURL, aliceToken) {
		t.Fatal("the viewer link carries the owner's relay token")
	}
	viewer := w.viewerClient(t, nil)
	servers, code := iceServers(t, viewer, ep.ICEURL, ep.Ticket)
	if code != http.StatusOK || len(onlyTransport(servers, "udp")) == 0 || len(onlyTransport(servers, "tcp")) == 0 || len(onlyTransport(servers, "tls")) == 0 {
		t.Fatalf("the link's ICE servers: %d %+v, want the relay's TURN over udp, tcp and tls", code, servers)
	}
	turnStats := func() int64 { return w.relay.TURN.ComputerStats("box").Created }

	t.Run("direct", func(t *testing.T) {
		path, pair := watch(t, viewer, ep.OfferURL, ep.Ticket, rtctest.Options{ICEServers: servers})
		if path.Media != api.MediaDirect || pair.Local == webrtc.ICECandidateTypeRelay || pair.Remote == webrtc.ICECandidateTypeRelay {
			t.Fatalf("with a direct path on loopback the media took %+v (receiver's pair %+v), want direct first", path, pair)
		}
	})
	for _, transport := range []string{"udp", "tcp", "tls"} {
		t.Run("turn-"+transport, func(t *testing.T) {
			before := turnStats()
			o := rtctest.Options{ICEServers: onlyTransport(servers, transport), RelayOnly: true}
			if transport == "tls" {
				o.TURNTLS = w.viewerTLS(t)
			}
			path, pair := watch(t, viewer, withQuery(t, ep.OfferURL, api.QueryICE, api.ICERelay), ep.Ticket, o)
			if path.Media != api.MediaTURN || path.Local != "relay" {
				t.Fatalf("relay-only on both ends: the Space says the media took %+v, want turn from a relayed candidate", path)
			}
			if pair.Local != webrtc.ICECandidateTypeRelay {
				t.Fatalf("relay-only: the receiver's selected pair %+v has no relayed candidate of its own", pair)
			}
			if want := map[string]string{"udp": "udp", "tcp": "tcp", "tls": "tls"}[transport]; pair.LocalRelayProtocol != want {
				t.Fatalf("the receiver reached TURN over %q, want %q", pair.LocalRelayProtocol, want)
			}
			if got := turnStats(); got < before+2 {
				t.Fatalf("the relay's TURN metered %d allocations of box for this view, want both ends' (2)", got-before)
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		short := alice.streamEndpoint(t, "relay:box", map[string]any{"ticket_ttl": 1})
		time.Sleep(2 * time.Second)
		r := rtctest.New(t, rtctest.Options{})
		res, err := rtctest.PostVia(t.Context(), viewer, short.OfferURL, short.Ticket, r.Offer)
		if err != nil || res.Status != http.StatusUnauthorized || res.Error == nil || res.Error.Kind != api.KindUnauthenticated {
			t.Fatalf("an offer with an expired ticket through the relay: %+v, %v; want 401 unauthenticated from the Space", res, err)
		}
		if _, code := iceServers(t, viewer, short.ICEURL, short.Ticket); code != http.StatusUnauthorized {
			t.Fatalf("ICE servers for an expired ticket: %d, want 401 (no TURN credential for a dead link)", code)
		}

		// A ticket another computer minted (on its own port, as its
		// links carry), on box's routes.
		other := startSpace(t, desktoptest.Start(t, desktoptest.Options{Size: "320x240"}))
		tk, err := other.d.Client.StreamTicket(t.Context(), api.TicketRequest{})
		if err != nil {
			t.Fatalf("mint a ticket on another computer: %v", err)
		}
		foreign := tk.Ticket
		res, err = rtctest.PostVia(t.Context(), viewer, ep.OfferURL, foreign, r.Offer)
		if err != nil || res.Status != http.StatusUnauthorized || res.Error == nil || res.Error.Kind != api.KindUnauthenticated {
			t.Fatalf("an offer to box with a ticket of another computer: %+v, %v; want 401 unauthenticated from box", res, err)
		}
	})
}
