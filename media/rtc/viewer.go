package rtc

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/interceptor/pkg/cc"
	"github.com/pion/rtcp"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
)

// gatherTimeout bounds the wait for the daemon's own candidates (the UDP
// mux has them at once; a TCP mux or NAT mapping is as quick), and for a
// relay-only viewer's relayed ones (see waitGathering).
const gatherTimeout = 5 * time.Second

// Input is where a viewer's input messages go (the desktop, through
// XTEST), with x and y in the target's pixels: the viewer's frame
// coordinates mapped back when its frames are scaled. Close releases what
// the viewer still holds down.
type Input interface {
	Input(ctx context.Context, m api.ViewerInput) error
	Close()
}

// ViewerOptions say how a viewer may use its stream.
type ViewerOptions struct {
	// ViewOnly viewers get no input channels: the daemon closes them.
	ViewOnly bool
	// MaxFPS is the frame rate the viewer asks for (the pipeline runs at
	// the highest of its viewers'); 0 = api.DefaultStreamFPS.
	MaxFPS int
	// MaxWidth and MaxHeight bound the viewer's frames (0: no bound): a
	// target larger is scaled down by api.StreamScale, and the viewers
	// that ask the same bounds share its pipeline.
	MaxWidth, MaxHeight int
	// Input receives the input and pointer messages; nil refuses them.
	Input Input
	// ConnectTimeout ends a viewer whose peer connection has not
	// connected that long after its answer (0: api.StreamConnectTimeout).
	ConnectTimeout time.Duration
	// OnClose is called once when the viewer ends, with why.
	OnClose func(error)
	// Control, when set, runs on a goroutine of its own once the viewer's
	// control channel is open, until ctx ends with the viewer: it tells
	// the viewer what the service knows besides pongs and sizes (the
	// pointer, ticket renewals). send answers ErrControlBusy while the
	// channel's send buffer is over MaxControlBuffered: a viewer that
	// falls behind skips what a later message supersedes.
	Control func(ctx context.Context, send func(api.ViewerControl) error)
	// ICEServers are the STUN and TURN servers the viewer's peer
	// connection gathers candidates with besides the daemon's own
	// addresses: the relay's TURN, for a viewer through cua-relay.
	ICEServers []api.ICEServer
	// RelayOnly gathers relayed candidates alone (api.ICERelay): the
	// media goes through a TURN server of ICEServers, or not at all.
	RelayOnly bool
	// TURNTLS, when set, verifies the turns: servers of ICEServers (the
	// Space's trust of its relay: a pinned fingerprint or a CA); nil
	// leaves it to pion, which trusts the system's roots.
	TURNTLS *tls.Config
	// OnPath, when set, is told the way the media takes once connected,
	// and again whenever ICE picks another pair.
	OnPath func(api.StreamPath)
	// Audio adds the desktop's sound to the viewer's stream, on an audio
	// track of the same stream as its video; the offer must receive Opus.
	Audio bool
	// OnPeer, when set, is told the viewer's own pointer over the video
	// (its control channel's peer messages, view-only viewers' too: it is
	// presence, not input), with x and y in the target's pixels, at most
	// api.MaxPeerPerSecond: the rest are dropped, save the last, which
	// comes once the rate allows. Control's send takes peer messages of
	// others in the target's pixels and converts them to the viewer's.
	OnPeer func(x, y int, away bool)
}

// MaxControlBuffered is how much a viewer's control channel may hold
// unsent before Control's messages are refused (ErrControlBusy).
const MaxControlBuffered = 256 << 10

// ErrControlBusy is the answer of a Control's send to a viewer that has
// not taken what it was sent yet.
var ErrControlBusy = errors.New("the viewer's control channel is full")

// Viewer is one peer connection watching a pipeline.
type Viewer struct {
	e    *Engine
	p    *pipeline
	pc   *webrtc.PeerConnection
	opts ViewerOptions
	ctx  context.Context
	stop context.CancelCauseFunc

	bitrate atomic.Int64 // the viewer's congestion controller's target, bit/s
	// connected is set once the peer connection has connected: the
	// connect timeout spares it from then on, whatever comes after.
	connected atomic.Bool
	once      sync.Once
	// controlOnce starts opts.Control with the first control channel.
	controlOnce sync.Once

	mu      sync.Mutex
	control *webrtc.DataChannel
	// path is the way the media takes (nil until connected); ended is
	// set once the viewer left, so that a late pair change counts no
	// viewer through TURN that is gone.
	path  *api.StreamPath
	ended bool
	// ice is the viewer's ICE transport, set before it connects.
	ice *webrtc.ICETransport
	// peers paces the viewer's peer messages to OnPeer (nil without it).
	peers *peerLimiter

	// listens is set when the viewer counts among the sound's listeners.
	listens bool
	// start is its way to the first frame.
	start *startup
	// sending (it connected: frames reach it) and hasFirst (its first
	// keyframe went out) are guarded by its pipeline's mu.
	sending, hasFirst bool
}

// Channel kinds by label; a label not listed is closed.
var channelLabels = map[string]bool{api.ChannelInput: true, api.ChannelPointer: true, api.ChannelControl: true}

func newViewer(ctx context.Context, e *Engine, p *pipeline, offer string, o ViewerOptions, st *startup) (*Viewer, string, error) {
	if err := checkOffer(offer); err != nil {
		return nil, "", err
	}
	v := &Viewer{e: e, p: p, opts: o, start: st}
	v.ctx, v.stop = context.WithCancelCause(ctx)
	if o.OnPeer != nil {
		v.peers = newPeerLimiter(func(m peerMove) { o.OnPeer(m.x, m.y, m.away) }, time.Now)
	}
	var est cc.BandwidthEstimator
	if o.RelayOnly && len(o.ICEServers) == 0 {
		return nil, "", errRelayOnlyNoTURN
	}
	se := e.settingEngine()
	if d := newTurnDialer(o); d != nil {
		// This viewer's copy of the shared settings (the mux is shared
		// all the same): only its TURN servers are dialled this way.
		se.SetICEProxyDialer(d)
	}
	webAPI, err := e.newAPI(se, func(b cc.BandwidthEstimator) { est = b })
	if err != nil {
		return nil, "", err
	}
	pc, err := webAPI.NewPeerConnection(ICEConfiguration(o.ICEServers, o.RelayOnly))
	if err != nil {
		return nil, "", api.Errorf(api.KindEnv, "create the peer connection: %v", err)
	}
	v.pc = pc
	fail := func(err error) (*Viewer, string, error) {
		v.once.Do(func() {}) // never joined: nothing for end to undo
		_ = pc.Close()
		if v.listens {
			e.audio.leave()
		}
		v.stop(err)
		return nil, "", err
	}
	if est != nil {
		est.OnTargetBitrateChange(func(bps int) {
			v.bitrate.Store(int64(bps))
			p.rebalance()
		})
	}
	tr, err := pc.AddTransceiverFromTrack(p.track, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
	if err != nil {
		return fail(api.Errorf(api.KindEnv, "add the video track: %v", err))
	}
	var audioTr *webrtc.RTPTransceiver
	if o.Audio {
		if e.audio == nil {
			return fail(api.CapabilityMissing(api.FeatureDesktopAudio, "this daemon streams no sound"))
		}
		t, err := e.audio.join(p.track.StreamID())
		if err != nil {
			return fail(err)
		}
		v.listens = true
		if audioTr, err = pc.AddTransceiverFromTrack(t, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly}); err != nil {
			return fail(api.Errorf(api.KindEnv, "add the audio track: %v", err))
		}
	}
	v.watchPath(tr) // before anything runs that could call it
	relayed := watchRelayed(pc)
	pc.OnDataChannel(v.onDataChannel)
	pc.OnICEConnectionStateChange(func(s webrtc.ICEConnectionState) {
		if s == webrtc.ICEConnectionStateConnected {
			v.start.mark(&v.start.ice)
		}
	})
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		switch s {
		case webrtc.PeerConnectionStateConnected:
			v.connected.Store(true)
			// pion tells of the connection before it keys SRTP, under the
			// DTLS transport's lock, and drops what is written before:
			// its State waits for that lock, so the first frame sent
			// after it is not lost.
			_ = tr.Sender().Transport().State()
			v.start.mark(&v.start.connected)
			p.connect(v)
			v.readPath()
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed:
			v.end(errors.New("the peer connection " + s.String()))
		}
	})
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return fail(api.Errorf(api.KindInvalidArgument, "the SDP offer was refused: %v", err))
	}
	answer, err := pc.CreateAnswer(nil)
	if err != nil {
		return fail(api.Errorf(api.KindInvalidArgument, "no answer to the SDP offer: %v", err))
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(answer); err != nil {
		return fail(api.Errorf(api.KindEnv, "set the SDP answer: %v", err))
	}
	if err := v.waitGathering(ctx, gathered, relayed); err != nil {
		return fail(err)
	}
	if o.RelayOnly && !strings.Contains(pc.LocalDescription().SDP, " typ relay") {
		return fail(api.Errorf(api.KindEnv, "the TURN server gave no relayed candidate (unreachable, or it refused the credential): the relay-only path (?ice=relay) cannot carry this stream").
			WithHint("retry; or open the stream without ice=relay, which goes direct when it can"))
	}
	if tr.Mid() == "" || tr.Sender() == nil {
		return fail(api.Errorf(api.KindInvalidArgument, "the offer has no video section that receives VP8: offer a recvonly video with VP8"))
	}
	if audioTr != nil && (audioTr.Mid() == "" || audioTr.Sender() == nil) {
		return fail(api.Errorf(api.KindInvalidArgument, "the offer asked for sound (audio=1) but has no audio section that receives Opus: offer a recvonly audio with Opus"))
	}
	v.start.mark(&v.start.answered)
	// Counted in place of the reservation made by Join.
	p.mu.Lock()
	p.joining--
	p.viewers[v] = struct{}{}
	p.mu.Unlock()
	go v.readRTCP(tr.Sender())
	if audioTr != nil {
		go v.readRTCP(audioTr.Sender())
	}
	// An offer posted and never connected (no ICE, or no DTLS after it)
	// would hold its viewer's slot until pion's ICE gives up, 30 s and
	// more; whoever posts offers in a loop would hold every slot.
	timeout := o.ConnectTimeout
	if timeout <= 0 {
		timeout = api.StreamConnectTimeout
	}
	connectTimer := time.AfterFunc(timeout, func() {
		if !v.connected.Load() {
			v.end(api.Errorf(api.KindTimeout, "the viewer did not connect within %s of its answer", timeout))
		}
	})
	context.AfterFunc(v.ctx, func() {
		connectTimer.Stop()
		v.end(context.Cause(v.ctx))
	})
	return v, pc.LocalDescription().SDP, nil
}

// checkOffer parses the offer far enough to answer a clear error for what
// is not SDP, before pion sees it.
func checkOffer(offer string) error {
	var d sdp.SessionDescription
	if err := d.UnmarshalString(offer); err != nil {
		return api.Errorf(api.KindInvalidArgument, "the body is not an SDP offer: %v", err)
	}
	for _, m := range d.MediaDescriptions {
		if m.MediaName.Media == "video" {
			return nil
		}
	}
	return api.Errorf(api.KindInvalidArgument, "the SDP offer has no video section: offer a recvonly video (with VP8)")
}

// readRTCP reads the viewer's RTCP (which runs the interceptors: NACKs,
// TWCC feedback) and turns PLI and FIR into keyframe requests.
func (v *Viewer) readRTCP(s *webrtc.RTPSender) {
	for {
		pkts, _, err := s.ReadRTCP()
		if err != nil {
			return
		}
		for _, pkt := range pkts {
			switch pkt.(type) {
			case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
				v.p.requestKeyframe()
			}
		}
	}
}

func (v *Viewer) onDataChannel(dc *webrtc.DataChannel) {
	label := dc.Label()
	if !channelLabels[label] {
		v.e.log.Debug("viewer opened an unknown data channel; closed", "label", label)
		dc.OnOpen(func() { _ = dc.Close() })
		return
	}
	if label != api.ChannelControl && (v.opts.ViewOnly || v.opts.Input == nil) {
		// Refused here, not only in the page: a view-only ticket's holder
		// may send anything.
		dc.OnOpen(func() { _ = dc.Close() })
		return
	}
	switch label {
	case api.ChannelControl:
		v.mu.Lock()
		v.control = dc
		v.mu.Unlock()
		dc.OnOpen(func() {
			if s := v.p.frameSize(); s.X > 0 {
				v.sendSize(s.X, s.Y)
			}
			v.sendPath()
			if v.opts.Control != nil {
				v.controlOnce.Do(func() {
					go v.opts.Control(v.ctx, func(m api.ViewerControl) error {
						if m.Cursor != nil { // in the frame's pixels, as input is
							c := *m.Cursor
							c.X, c.Y = v.p.toFrame(c.X, c.Y)
							m.Cursor = &c
						}
						if m.Peer != nil && !m.Peer.Away { // the same
							pp := *m.Peer
							pp.X, pp.Y = v.p.toFrame(pp.X, pp.Y)
							m.Peer = &pp
						}
						return sendControl(dc, m)
					})
				})
			}
		})
		dc.OnMessage(func(m webrtc.DataChannelMessage) { v.onControl(dc, m.Data) })
	default:
		dc.OnMessage(func(m webrtc.DataChannelMessage) { v.onInput(dc, m.Data) })
	}
}

func (v *Viewer) onInput(dc *webrtc.DataChannel, b []byte) {
	m, err := api.ParseViewerInput(b)
	if err == nil {
		switch m.Type {
		case api.InputMove, api.InputButton, api.InputScroll:
			m.X, m.Y = v.p.toTarget(m.X, m.Y)
		}
		err = v.opts.Input.Input(v.ctx, m)
	}
	if err != nil {
		send(dc, api.ViewerControl{Type: api.ControlError, Error: api.AsError(err)})
	}
}

func (v *Viewer) onControl(dc *webrtc.DataChannel, b []byte) {
	m, err := api.ParseViewerControl(b)
	if err != nil {
		send(dc, api.ViewerControl{Type: api.ControlError, Error: api.AsError(err)})
		return
	}
	switch m.Type {
	case api.ControlKeyframe:
		v.p.requestKeyframe()
	case api.ControlPing:
		send(dc, api.ViewerControl{Type: api.ControlPong, ID: m.ID, T: m.T, ServerMS: time.Now().UnixMilli()})
	case api.ControlPeer:
		if v.peers != nil {
			mv := peerMove{away: m.Peer.Away}
			if !mv.away {
				x, y := v.p.toTarget(float64(m.Peer.X), float64(m.Peer.Y))
				mv.x, mv.y = int(x), int(y)
			}
			v.peers.offer(mv)
		}
	}
}

func (v *Viewer) sendSize(w, h int) {
	v.mu.Lock()
	dc := v.control
	v.mu.Unlock()
	if dc != nil && dc.ReadyState() == webrtc.DataChannelStateOpen {
		send(dc, api.ViewerControl{Type: api.ControlSize, Width: w, Height: h})
	}
}

// sendControl is send for a Control, which learns when the viewer is gone
// or behind.
func sendControl(dc *webrtc.DataChannel, m api.ViewerControl) error {
	if dc.ReadyState() != webrtc.DataChannelStateOpen {
		return errors.New("the viewer's control channel is closed")
	}
	if dc.BufferedAmount() > MaxControlBuffered {
		return ErrControlBusy
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return dc.SendText(string(b))
}

func send(dc *webrtc.DataChannel, m api.ViewerControl) {
	b, err := json.Marshal(m)
	if err == nil {
		_ = dc.SendText(string(b))
	}
}

// Close ends the viewer (a DELETE of its session).
func (v *Viewer) Close() { v.end(errors.New("the viewer's session was deleted")) }

// Done is closed when the viewer has ended.
func (v *Viewer) Done() <-chan struct{} { return v.ctx.Done() }

// end closes the peer connection, releases held input and leaves the
// pipeline, once.
func (v *Viewer) end(cause error) {
	v.once.Do(func() {
		v.stop(cause)
		if v.peers != nil {
			v.peers.stop()
		}
		_ = v.pc.Close()
		if v.opts.Input != nil {
			v.opts.Input.Close()
		}
		v.e.leave(v.p, v)
		if v.listens {
			v.e.audio.leave()
		}
		v.leavePath()
		if v.opts.OnClose != nil {
			v.opts.OnClose(cause)
		}
		if cause != nil && !strings.Contains(cause.Error(), "deleted") {
			v.e.log.Debug("viewer ended", "stream", v.p.key, "cause", cause)
		}
	})
}
