package rtc

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
)

// TURN for a viewer (the relay's, when the offer came through cua-relay):
// its ICE servers join the peer connection's configuration. The relayed
// candidates do not go through the engine's UDP mux: pion's agent opens a
// socket (UDP) or a connection (TCP, TLS) of its own to the TURN server
// for each, whatever the mux and the network types (those only need UDP4
// among them: a relayed candidate is UDP on the TURN server's side).

// Bounds of the wait for a viewer's relayed candidates: the answer holds
// every candidate (no trickle), so a TURN server that is slow or out of
// reach over one transport would delay every viewer's start.
const (
	// turnGatherWait is how long an answer that has its direct
	// candidates waits for a first relayed one.
	turnGatherWait = 2 * time.Second
	// relayGrace is how long it waits, once one relayed candidate came,
	// for the other transports' (TCP and TLS are a round trip or two
	// behind UDP; the first is enough to connect).
	relayGrace = 250 * time.Millisecond
)

// watchRelayed is closed at the first relayed candidate pc gathers.
func watchRelayed(pc *webrtc.PeerConnection) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	pc.OnICECandidate(func(c *webrtc.ICECandidate) {
		if c != nil && c.Typ == webrtc.ICECandidateTypeRelay {
			once.Do(func() { close(ch) })
		}
	})
	return ch
}

// waitGathering waits for the viewer's candidates: all of them, or,
// with TURN servers, the first relayed one and relayGrace after it, or
// (not relay-only) turnGatherWait without one. Then the answer goes with
// what was gathered; a relay-only viewer's without a relayed candidate
// is refused by the caller.
func (v *Viewer) waitGathering(ctx context.Context, gathered, relayed <-chan struct{}) error {
	o := v.opts
	hard := time.NewTimer(gatherTimeout)
	defer hard.Stop()
	var soft, grace <-chan time.Time
	if len(o.ICEServers) > 0 && !o.RelayOnly {
		t := time.NewTimer(turnGatherWait)
		defer t.Stop()
		soft = t.C
	}
	for {
		select {
		case <-gathered:
			return nil
		case <-relayed:
			relayed = nil
			t := time.NewTimer(relayGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			return nil
		case <-soft:
			v.e.log.Warn("the TURN server gave no relayed candidate in time: the viewer's answer goes without them", "stream", v.p.key, "after", turnGatherWait)
			return nil
		case <-hard.C:
			if len(o.ICEServers) == 0 {
				return api.Errorf(api.KindTimeout, "gathering the daemon's ICE candidates took over %s", gatherTimeout)
			}
			return nil
		case <-ctx.Done():
			return api.Errorf(api.KindCancelled, "the offer's caller went away: %v", context.Cause(ctx))
		}
	}
}

// ICEConfiguration is a peer connection's configuration with servers as
// its ICE servers; relayOnly gathers relayed candidates alone. The daemon's
// viewers and the test receivers (rtctest) configure ICE the same way.
func ICEConfiguration(servers []api.ICEServer, relayOnly bool) webrtc.Configuration {
	var c webrtc.Configuration
	for _, s := range servers {
		c.ICEServers = append(c.ICEServers, webrtc.ICEServer{URLs: s.URLs, Username: s.Username, Credential: s.Credential})
	}
	if relayOnly {
		c.ICETransportPolicy = webrtc.ICETransportPolicyRelay
	}
	return c
}

// TURNDialer dials the TCP and TLS TURN servers of one peer connection,
// in pion's proxy-dialer seam (with a dialer set, pion's agent takes the
// connection to a turn: or turns: server over TCP as the dialer makes it;
// SettingEngine.SetICEProxyDialer). It exists for the TLS: pion verifies
// a turns: server against the system's roots alone, and a Space trusts
// its relay by what it was attached with (a pinned fingerprint, a CA
// file, or the system's roots): the same trust is used here. Nothing is
// skipped: a relay whose certificate the Space would refuse for its
// control session is refused as a TURN server too.
type TURNDialer struct {
	tls *tls.Config
	// tlsAddrs are the host:port of the turns: servers, as pion names
	// them to Dial; every other address is dialled as plain TCP.
	tlsAddrs map[string]bool
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewTURNDialer is the dialer of servers whose turns: ones cfg trusts;
// dial makes the TCP connections (nil: a net.Dialer's).
func NewTURNDialer(servers []api.ICEServer, cfg *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *TURNDialer {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	d := &TURNDialer{tls: cfg, tlsAddrs: map[string]bool{}, dial: dial}
	for _, s := range servers {
		for _, raw := range s.URLs {
			u, err := stun.ParseURI(raw)
			if err != nil || u.Scheme != stun.SchemeTypeTURNS {
				continue
			}
			d.tlsAddrs[net.JoinHostPort(u.Host, strconv.Itoa(u.Port))] = true
		}
	}
	return d
}

// newTurnDialer is the dialer of o's TURN servers, nil when pion's own
// dialling serves (no trust of the Space's own for their TLS).
func newTurnDialer(o ViewerOptions) *TURNDialer {
	if o.TURNTLS == nil {
		return nil
	}
	return NewTURNDialer(o.ICEServers, o.TURNTLS, nil)
}

// Dial is proxy.Dialer's: pion calls it while gathering, without a
// context, so gatherTimeout bounds the dial and the handshake.
func (d *TURNDialer) Dial(network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gatherTimeout)
	defer cancel()
	c, err := d.dial(ctx, network, addr)
	if err != nil || !d.tlsAddrs[addr] {
		return c, err
	}
	cfg := d.tls.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return tc, nil
}

// candidatePath is the StreamPath of an ICE candidate pair; relayProto
// is how the Space's end reaches its TURN server when its candidate is
// relayed (udp, tcp or tls; "" otherwise).
func candidatePath(p *webrtc.ICECandidatePair, relayProto string) api.StreamPath {
	sp := api.StreamPath{Media: api.MediaDirect, Local: p.Local.Typ.String(), Remote: p.Remote.Typ.String(), Protocol: p.Local.Protocol.String()}
	if p.Local.Typ == webrtc.ICECandidateTypeRelay || p.Remote.Typ == webrtc.ICECandidateTypeRelay {
		sp.Media = api.MediaTURN
	}
	switch relayProto {
	case "tcp", "tls":
		// TURN over TCP or TLS: what crosses the Space's network is TCP,
		// though the relayed candidate itself is UDP on the relay's side.
		sp.Protocol = "tcp"
	}
	return sp
}

// localRelayProtocol is how the Space's candidate of the selected pair
// reaches its TURN server (pion tells it in the stats only).
func localRelayProtocol(pc *webrtc.PeerConnection, it *webrtc.ICETransport) string {
	ps, ok := it.GetSelectedCandidatePairStats()
	if !ok {
		return ""
	}
	if cs, ok := pc.GetStats()[ps.LocalCandidateID].(webrtc.ICECandidateStats); ok {
		return cs.RelayProtocol
	}
	return ""
}

// errRelayOnlyNoTURN refuses RelayOnly without an ICE server to relay.
var errRelayOnlyNoTURN = api.Errorf(api.KindInvalidArgument, "relay-only ICE needs a TURN server among the viewer's ICE servers, and it has none")

// watchPath follows the pair ICE selects for the viewer (a change after
// the first: ICE renominated, or the network changed).
func (v *Viewer) watchPath(tr *webrtc.RTPTransceiver) {
	v.ice = tr.Sender().Transport().ICETransport()
	v.ice.OnSelectedCandidatePairChange(func(*webrtc.ICECandidatePair) {
		if v.connected.Load() {
			v.readPath()
		}
	})
}

// readPath reads the selected pair and, when the path changed, counts,
// logs and tells it (OnPath, and the viewer's control channel).
func (v *Viewer) readPath() {
	if v.ice == nil {
		return
	}
	pair, err := v.ice.GetSelectedCandidatePair()
	if err != nil || pair == nil || pair.Local == nil || pair.Remote == nil {
		return
	}
	sp := candidatePath(pair, localRelayProtocol(v.pc, v.ice))
	v.mu.Lock()
	if v.ended || (v.path != nil && *v.path == sp) {
		v.mu.Unlock()
		return
	}
	was := v.path != nil && v.path.Media == api.MediaTURN
	v.path = &sp
	if now := sp.Media == api.MediaTURN; now != was {
		// Under v.mu, as leavePath's: a change and the end count in order.
		v.e.mu.Lock()
		if now {
			v.e.turnViewers++
		} else {
			v.e.turnViewers--
		}
		v.e.mu.Unlock()
	}
	v.mu.Unlock()
	v.e.log.Info("stream viewer connected", "stream", v.p.key, "media", sp.Media, "local", sp.Local, "remote", sp.Remote, "protocol", sp.Protocol)
	if v.opts.OnPath != nil {
		v.opts.OnPath(sp)
	}
	v.sendPath()
}

// sendPath tells the viewer its path, once its control channel is open
// (the pair is often selected before the channel opens: its OnOpen sends
// it then).
func (v *Viewer) sendPath() {
	v.mu.Lock()
	dc, sp := v.control, v.path
	v.mu.Unlock()
	if dc != nil && sp != nil && dc.ReadyState() == webrtc.DataChannelStateOpen {
		p := *sp
		send(dc, api.ViewerControl{Type: api.ControlPath, Path: &p})
	}
}

// leavePath takes an ended viewer out of the TURN count.
func (v *Viewer) leavePath() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.ended = true
	if v.path != nil && v.path.Media == api.MediaTURN {
		v.e.mu.Lock()
		v.e.turnViewers--
		v.e.mu.Unlock()
	}
}
