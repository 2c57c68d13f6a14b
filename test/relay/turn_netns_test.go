package relay_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/relay/relayd"
)

// The networks of TestStreamThroughTURNAcrossNetworks: the Space's side
// (the test's own namespace) and the viewer's side each reach the relay,
// which forwards nothing between them.
const (
	spaceSideRelay  = "10.98.0.1"
	spaceSideSpace  = "10.98.0.2"
	viewerSideRelay = "10.99.0.1"
	viewerSideHost  = "10.99.0.2"
	relayHTTPSPort  = 8443
	relayTURNPort   = 3478
)

// TestStreamThroughTURNAcrossNetworks: a viewer on a network that
// reaches the relay but not the Space (network namespaces joined by veth
// pairs, the relay between them forwarding nothing) opens the owner's
// link through the relay's HTTPS and gets frames: ICE finds no direct
// path, and the relay's TURN carries the media, without any candidate
// filtered out.
func TestStreamThroughTURNAcrossNetworks(t *testing.T) {
	desktoptest.Require(t)
	vp8test.Require(t)
	relayNS, viewerNS := newNetns(t, "relay"), newNetns(t, "viewer")
	link(t, vethEnd{nil, "cuasp0", spaceSideSpace + "/24"}, vethEnd{relayNS, "cuarl0", spaceSideRelay + "/24"})
	link(t, vethEnd{viewerNS, "cuavw0", viewerSideHost + "/24"}, vethEnd{relayNS, "cuarl1", viewerSideRelay + "/24"})

	// The relay, in a process born in its namespace, reached by the Space
	// as 10.98.0.1 and by the viewer as 10.99.0.1.
	ca := tlstest.NewCA(t)
	caFile := ca.WriteCA(t, t.TempDir())
	dir := t.TempDir()
	certFile, keyFile := tlstest.WritePair(t, dir, ca.Issue(t, spaceSideRelay, viewerSideRelay))
	spaceURL := "https://" + net.JoinHostPort(spaceSideRelay, strconv.Itoa(relayHTTPSPort))
	cfg := relayProcessConfig{Listen: ":" + strconv.Itoa(relayHTTPSPort), DataDir: filepath.Join(dir, "data"), CertFile: certFile, KeyFile: keyFile,
		URLs:     []string{"wss://" + net.JoinHostPort(spaceSideRelay, strconv.Itoa(relayHTTPSPort))},
		TURNHost: "0.0.0.0", TURNPort: relayTURNPort, TURNRelayIP: viewerSideRelay}
	startRelayProcess(t, cfg, relayNS)
	admin := relayd.NewAdminClient(cfg.DataDir)
	if _, err := admin.CreateUser(t.Context(), "alice", ""); err != nil {
		t.Fatal(err)
	}
	userToken, err := admin.CreateToken(t.Context(), "alice")
	if err != nil {
		t.Fatal(err)
	}

	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	desktoptest.NewXClient(t, display, desktoptest.RandomWord(t), 200, 150, []desktoptest.Fill{{W: 200, H: 150, RGB: 0xcc6633}})
	alice := newBridgeAt(t, spaceURL, caFile, userToken)
	s := startSpace(t, display)
	alice.addSpace(t, "box", s)
	if r := alice.register(t, "box"); !r.Online {
		t.Fatalf("register: %+v", r)
	}
	s.waitConnected(t, 0)
	ep := alice.streamEndpoint(t, "relay:box", nil)

	// The viewer's side: its HTTP client and its peer connection's
	// sockets are made in its namespace.
	trust := caTLS(t, caFile)
	tr := &http.Transport{TLSClientConfig: trust, DialContext: viewerNS.dialContext}
	t.Cleanup(tr.CloseIdleConnections)
	viewer := &http.Client{Transport: tr, Timeout: frameTimeout}
	// The topology holds: the Space's port is out of the viewer's reach.
	spacePort := strings.TrimPrefix(s.d.URL[strings.LastIndex(s.d.URL, ":"):], ":")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	if c, err := viewerNS.dialContext(ctx, "tcp", net.JoinHostPort(spaceSideSpace, spacePort)); err == nil {
		c.Close()
		t.Fatal("the viewer's namespace reaches the Space's network: the test would prove nothing")
	}
	cancel()

	// The link as a person on the other network opens it: the relay's
	// name there.
	asViewer := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = net.JoinHostPort(viewerSideRelay, strconv.Itoa(relayHTTPSPort))
		return u.String()
	}
	servers, code := iceServers(t, viewer, asViewer(ep.ICEURL), ep.Ticket)
	if code != http.StatusOK || len(servers) == 0 || !strings.Contains(strings.Join(servers[len(servers)-1].URLs, " "), viewerSideRelay) {
		t.Fatalf("ICE servers on the viewer's side: %d %+v, want the relay's TURN at %s", code, servers, viewerSideRelay)
	}
	o := rtctest.Options{ICEServers: servers, Net: viewerNS.pionNet(t), TURNTLS: trust.Clone()}
	path, pair := watch(t, viewer, asViewer(ep.OfferURL), ep.Ticket, o)
	if path.Media != api.MediaTURN {
		t.Fatalf("across networks the Space says the media took %+v, want turn", path)
	}
	if pair.Local != webrtc.ICECandidateTypeRelay && pair.Remote != webrtc.ICECandidateTypeRelay {
		t.Fatalf("the viewer's selected pair %+v has no relayed candidate", pair)
	}
}
