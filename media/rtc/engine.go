// Package rtc streams a desktop or window to WebRTC viewers: one capture
// per target, feeding one pipeline per frame size its viewers asked for
// (scale, I420, VP8, one track) shared by all the viewers of that size,
// and one pion peer connection per viewer, answered whole to a WHEP offer,
// with the data channels of api (input, pointer, control).
//
// Everything network-facing is set for the guest's case: one UDP port
// shared by every viewer, 4 MB socket buffers, loopback candidates and no
// mDNS (a viewer on the same machine connects, and nothing is announced on
// the LAN), congestion control (TWCC with Google's estimator) steering the
// encoder's bitrate, and a zero playout delay.
package rtc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/cc"
	"github.com/pion/interceptor/pkg/gcc"
	"github.com/pion/interceptor/pkg/nack"
	"github.com/pion/interceptor/pkg/report"
	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/vp8"
)

// MaxViewers bounds the viewers of all streams at once: each costs a peer
// connection, and past a handful the encoder's shared bitrate serves the
// slowest badly anyway.
const MaxViewers = 16

// MaxOfferBytes bounds a WHEP offer; a browser's is a few KB.
const MaxOfferBytes = 64 << 10

// Config is how an Engine reaches its viewers.
type Config struct {
	// UDP is the socket every viewer's ICE shares (see ListenUDP).
	UDP net.PacketConn
	// TCP, when set, also offers ICE over TCP on that listener (passive
	// candidates), for viewers whose UDP is blocked.
	TCP net.Listener
	// NAT1To1IPs are the public addresses of a guest behind a 1:1 NAT,
	// announced instead of the host's own.
	NAT1To1IPs []string
	Logger     *slog.Logger
	// OnEncoded, when set, is told of every frame sent (for metrics).
	OnEncoded func(key bool, bytes int, took time.Duration)
	// Audio, when set, opens the desktop's sound for the first viewer
	// that asks for it (ViewerOptions.Audio); nil: the engine has none.
	Audio func() (AudioSource, error)
	// OnAudio, when set, is told of every 20 ms of sound encoded: sent,
	// or left out as silence by DTX (for metrics).
	OnAudio func(sent bool, bytes int, took time.Duration)
}

// Engine holds the captures and pipelines of the targets being watched and
// the settings every viewer's peer connection shares.
type Engine struct {
	cfg Config
	log *slog.Logger
	// audio is the sound of every viewer that asked for it (nil: none).
	audio *audio

	// settings are made for the first viewer: the UDP mux's reader and
	// what pion needs for it are nothing an idle daemon should carry (a
	// few hundred KB of resident memory).
	settingsOnce sync.Once
	settings     webrtc.SettingEngine

	mu       sync.Mutex
	captures map[string]*capture // by target key
	viewers  int
	closed   bool
	// turnViewers are the viewers whose media goes through TURN now.
	turnViewers int
}

// NewEngine checks cfg; nothing runs, and nothing reads the sockets,
// until a viewer joins.
func NewEngine(cfg Config) (*Engine, error) {
	if cfg.UDP == nil {
		return nil, errors.New("rtc: no UDP socket")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{cfg: cfg, log: cfg.Logger, captures: map[string]*capture{}}
	if cfg.Audio != nil {
		e.audio = newAudio(cfg.Audio, cfg.Logger, cfg.OnAudio)
	}
	return e, nil
}

// settingEngine is what every viewer's peer connection shares, made once.
func (e *Engine) settingEngine() webrtc.SettingEngine {
	e.settingsOnce.Do(func() {
		se := &e.settings
		se.LoggerFactory = pionLogs{log: e.cfg.Logger}
		// No mDNS: a guest must not announce itself on the LAN, and the
		// viewer's own mDNS names (Chromium hides its addresses behind
		// them) resolve to nothing here; a viewer that sends none still
		// connects through the daemon's candidates (peer-reflexive on our
		// side).
		se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
		se.SetIncludeLoopbackCandidate(true)
		se.SetICEUDPMux(webrtc.NewICEUDPMux(se.LoggerFactory.NewLogger("udpmux"), e.cfg.UDP))
		types := []webrtc.NetworkType{webrtc.NetworkTypeUDP4}
		if e.cfg.TCP != nil {
			se.SetICETCPMux(webrtc.NewICETCPMux(se.LoggerFactory.NewLogger("tcpmux"), e.cfg.TCP, 8))
			types = append(types, webrtc.NetworkTypeTCP4)
		}
		se.SetNetworkTypes(types)
		if len(e.cfg.NAT1To1IPs) > 0 {
			se.SetNAT1To1IPs(e.cfg.NAT1To1IPs, webrtc.ICECandidateTypeHost)
		}
	})
	return e.settings
}

// newAPI builds one viewer's pion API, on se (its copy of the shared
// settings): VP8, and Opus for the sound, NACK and RTCP reports,
// TWCC feedback into a send-side estimator whose target steers the
// encoder, and the zero playout delay. Each viewer has its own, so that
// the estimator the congestion controller makes belongs to that viewer.
func (e *Engine) newAPI(se webrtc.SettingEngine, onEstimator func(cc.BandwidthEstimator)) (*webrtc.API, error) {
	m := &webrtc.MediaEngine{}
	fb := []webrtc.RTCPFeedback{{Type: "goog-remb"}, {Type: "ccm", Parameter: "fir"}, {Type: "nack"}, {Type: "nack", Parameter: "pli"}, {Type: webrtc.TypeRTCPFBTransportCC}}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000, RTCPFeedback: fb},
		PayloadType:        96,
	}, webrtc.RTPCodecTypeVideo); err != nil {
		return nil, err
	}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: opusCodec, PayloadType: opusPayloadType}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, err
	}
	if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: PlayoutDelayURI}, webrtc.RTPCodecTypeVideo); err != nil {
		return nil, err
	}
	// Only the send side's interceptors: the viewer sends no media, and
	// pion's NACK generator and receiver reports would each run a ticker
	// per viewer (ten wake-ups a second, the generator's) for nothing.
	reg := &interceptor.Registry{}
	responder, err := nack.NewResponderInterceptor()
	if err != nil {
		return nil, err
	}
	reg.Add(responder)
	reports, err := report.NewSenderInterceptor()
	if err != nil {
		return nil, err
	}
	reg.Add(reports)
	ccf, err := cc.NewInterceptor(func() (cc.BandwidthEstimator, error) {
		// No pacer: a keyframe goes out at once (the socket buffers take
		// the burst); pacing it at the estimate would add its whole
		// transmission time to the latency.
		return gcc.NewSendSideBWE(
			gcc.SendSideBWEInitialBitrate(vp8.DefaultBitrateKbps*1000),
			gcc.SendSideBWEMinBitrate(vp8.MinBitrateKbps*1000),
			gcc.SendSideBWEMaxBitrate(vp8.MaxBitrateKbps*1000),
			gcc.SendSideBWEPacer(gcc.NewNoOpPacer()))
	})
	if err != nil {
		return nil, err
	}
	ccf.OnNewPeerConnection(func(_ string, est cc.BandwidthEstimator) { onEstimator(est) })
	reg.Add(ccf)
	if err := webrtc.ConfigureTWCCHeaderExtensionSender(m, reg); err != nil {
		return nil, err
	}
	reg.Add(playoutDelayFactory{})
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se)), nil
}

// Target is what a viewer watches: Key names it (one capture per key),
// Open makes its source when the first viewer joins.
type Target struct {
	Key  string
	Open func() (Source, error)
}

// Join adds a viewer of target from its WHEP offer and answers the whole
// SDP answer (every candidate gathered). The viewer lives until ctx ends,
// Close is called, its connection fails, or its target's stream ends.
func (e *Engine) Join(ctx context.Context, target Target, offer string, o ViewerOptions) (*Viewer, string, error) {
	if len(offer) > MaxOfferBytes {
		return nil, "", api.Errorf(api.KindInvalidArgument, "the SDP offer is %d bytes, over the limit of %d", len(offer), MaxOfferBytes)
	}
	st := newStartup()
	p, err := e.reserve(target, o)
	if err != nil {
		return nil, "", err
	}
	v, answer, err := newViewer(ctx, e, p, offer, o, st)
	if err != nil {
		e.leave(p, nil)
		return nil, "", err
	}
	return v, answer, nil
}

// reserve counts a viewer in, and finds or starts the pipeline of its
// target and size (and the target's capture, for its first pipeline).
func (e *Engine) reserve(target Target, o ViewerOptions) (*pipeline, error) {
	fps := o.MaxFPS
	if fps <= 0 {
		fps = api.DefaultStreamFPS
	}
	fps = min(fps, api.MaxStreamFPS)
	bounds := api.Size{Width: max(o.MaxWidth, 0), Height: max(o.MaxHeight, 0)}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, api.Errorf(api.KindCancelled, "the daemon is shutting down")
	}
	if e.viewers >= MaxViewers {
		return nil, api.Errorf(api.KindLimitExceeded, "%d viewers are watching, the most this daemon serves at once; close a viewer first", MaxViewers)
	}
	c := e.captures[target.Key]
	fresh := c == nil
	if fresh {
		src, err := target.Open()
		if err != nil {
			return nil, err
		}
		c = newCapture(target.Key, src, e.log, e.captureEnded)
	}
	c.mu.Lock()
	p := c.pipes[bounds]
	c.mu.Unlock()
	if p == nil {
		var err error
		if p, err = newPipeline(c, bounds, fps, e.log, e.pipelineEnded); err != nil {
			if fresh {
				c.src.Close()
			}
			return nil, err
		}
		p.onEncoded = e.cfg.OnEncoded
		p.start()
		c.add(p)
		e.log.Info("stream started", "stream", p.key)
	}
	if fresh {
		e.captures[target.Key] = c
		c.start()
	}
	// The pipeline runs at the highest rate any of its viewers asked for,
	// the capture at the highest of its pipelines'.
	if int64(fps) > p.maxFPS.Load() {
		p.maxFPS.Store(int64(fps))
	}
	p.mu.Lock()
	p.joining++ // a viewer on its way in: the pipeline must not stop under it
	p.mu.Unlock()
	e.viewers++
	return p, nil
}

// leave takes a viewer (nil: a reservation) out; the last one out of a
// pipeline stops it, and the last pipeline of a capture stops that, so
// that nothing is captured while nobody watches.
func (e *Engine) leave(p *pipeline, v *Viewer) {
	e.mu.Lock()
	p.mu.Lock()
	was := v == nil
	if v == nil {
		p.joining--
	} else {
		_, was = p.viewers[v]
		delete(p.viewers, v)
	}
	empty := len(p.viewers) == 0 && p.joining == 0
	p.mu.Unlock()
	if was {
		e.viewers--
	}
	var lastOfCapture bool
	if empty {
		lastOfCapture = p.cap.remove(p) && e.captures[p.cap.key] == p.cap
		if lastOfCapture {
			delete(e.captures, p.cap.key)
		}
	}
	e.mu.Unlock()
	if !empty {
		p.rebalance()
		return
	}
	p.stop()
	e.log.Info("stream stopped: no viewer left", "stream", p.key)
	if lastOfCapture {
		p.cap.stop()
	}
}

// captureEnded is called when a capture's goroutine ends: stopped (err
// nil), or its target went (err): the viewers of all its pipelines are
// closed.
func (e *Engine) captureEnded(c *capture, err error) {
	if c.stopping.Load() {
		return
	}
	c.cancel()
	if err == nil {
		err = errors.New("the capture failed")
	}
	e.mu.Lock()
	if e.captures[c.key] == c {
		delete(e.captures, c.key)
	}
	e.mu.Unlock()
	e.log.Info("stream ended", "stream", c.key, "err", err)
	var pipes []*pipeline
	pipes, _ = c.pipelines(pipes)
	for _, p := range pipes {
		for _, v := range p.viewerList() {
			v.end(fmt.Errorf("the stream ended: %w", err))
		}
	}
}

// pipelineEnded is called when a pipeline's encoder ends: stopped (err
// nil), or failed (err): its viewers are closed, and the last of them to
// leave takes it out of its capture.
func (e *Engine) pipelineEnded(p *pipeline, err error) {
	if p.stopping.Load() || err == nil {
		return
	}
	e.log.Error("stream ended", "stream", p.key, "err", err)
	for _, v := range p.viewerList() {
		v.end(fmt.Errorf("the stream ended: %w", err))
	}
}

// Streams is the number of pipelines running: one per target and frame
// size watched.
func (e *Engine) Streams() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.captures {
		c.mu.Lock()
		n += len(c.pipes)
		c.mu.Unlock()
	}
	return n
}

// Captures is the number of targets being captured: one per target
// watched, whatever the sizes.
func (e *Engine) Captures() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.captures)
}

// Viewers is the number of viewers connected or connecting.
func (e *Engine) Viewers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.viewers
}

// AudioListeners is the number of viewers that asked for the sound (one
// capture and encoder serves them all while there is any).
func (e *Engine) AudioListeners() int {
	if e.audio == nil {
		return 0
	}
	return e.audio.listeners()
}

// TURNViewers is the number of connected viewers whose media a TURN
// server relays (their path's Media is api.MediaTURN).
func (e *Engine) TURNViewers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.turnViewers
}

// Close ends every viewer and pipeline; no viewer joins after it.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	var vs []*Viewer
	for _, c := range e.captures {
		var pipes []*pipeline
		pipes, _ = c.pipelines(pipes)
		for _, p := range pipes {
			vs = append(vs, p.viewerList()...)
		}
	}
	e.mu.Unlock()
	for _, v := range vs {
		v.Close()
	}
}
