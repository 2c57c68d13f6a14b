// Package rtctest is the viewer side of the stream tests and benchmarks: a
// pion receiver in the test process, on loopback only, that answers to the
// daemon's WHEP routes, reassembles VP8 frames from RTP, and opens the
// data channels a viewer page would.
package rtctest

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/rtp/codecs"
	"github.com/pion/transport/v5"
	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc"
)

// Frame is one whole VP8 frame as it arrived.
type Frame struct {
	Data    []byte
	Key     bool
	Arrived time.Time
	// Timestamp is its RTP timestamp (90 kHz): SenderReport's Wall maps
	// it to the sender's clock.
	Timestamp uint32
	// Width and Height are read from a keyframe's header (0 otherwise).
	Width, Height int
	// PlayoutDelay says the frame's packets carried the zero playout delay.
	PlayoutDelay bool
}

// AudioPacket is one Opus packet as it arrived.
type AudioPacket struct {
	Payload        []byte
	Timestamp      uint32
	SequenceNumber uint16
	Marker         bool
	Arrived        time.Time
}

// Options shape the receiver's offer.
type Options struct {
	// Audio offers to receive Opus too (the daemon sends it on audio=1).
	Audio bool
	// Channels are the data channels to open (api.ChannelInput, ...).
	Channels []string
	// NoCandidates sends the offer before any candidate is gathered, as
	// Chromium on loopback does: the daemon must connect from its own
	// candidates alone.
	NoCandidates bool
	// ICEServers are the receiver's TURN servers (a relay's).
	ICEServers []api.ICEServer
	// RelayOnly gathers relayed candidates alone, and filters the
	// daemon's others out of its answer (Accept): the media can only
	// cross a TURN server.
	RelayOnly bool
	// TURNTLS trusts the turns: servers among ICEServers (a relay whose
	// certificate a test CA signed): pion alone trusts the system's roots.
	TURNTLS *tls.Config
	// Net, when set, is where the receiver's sockets are made (a network
	// namespace the test made): all of its interfaces are used, not
	// loopback alone.
	Net transport.Net
}

// Receiver is one viewer.
type Receiver struct {
	PC     *webrtc.PeerConnection
	Frames chan Frame
	// Audio are the Opus packets of the audio track (Options.Audio).
	Audio    chan AudioPacket
	Channels map[string]*webrtc.DataChannel
	// Messages are the texts received on each channel.
	Messages map[string]chan string
	// Closed is closed per channel when it closes.
	Closed map[string]chan struct{}
	Offer  string

	relayOnly bool

	mu     sync.Mutex
	ssrc   uint32
	srs    map[webrtc.RTPCodecType]SenderReport // the latest of each track
	tracks chan *webrtc.TrackRemote
}

// New makes a receiver and its offer: recvonly VP8 video with NACK, PLI,
// FIR and TWCC, the playout-delay extension, and the channels asked for.
func New(t testing.TB, o Options) *Receiver {
	t.Helper()
	m := &webrtc.MediaEngine{}
	fb := []webrtc.RTCPFeedback{{Type: "ccm", Parameter: "fir"}, {Type: "nack"}, {Type: "nack", Parameter: "pli"}, {Type: webrtc.TypeRTCPFBTransportCC}}
	if err := m.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000, RTCPFeedback: fb},
		PayloadType:        96,
	}, webrtc.RTPCodecTypeVideo); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: rtc.PlayoutDelayURI}, webrtc.RTPCodecTypeVideo); err != nil {
		t.Fatal(err)
	}
	if o.Audio {
		if err := m.RegisterCodec(webrtc.RTPCodecParameters{
			RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2, SDPFmtpLine: "minptime=10;useinbandfec=1"},
			PayloadType:        111,
		}, webrtc.RTPCodecTypeAudio); err != nil {
			t.Fatal(err)
		}
	}
	reg := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(m, reg); err != nil {
		t.Fatal(err)
	}
	var se webrtc.SettingEngine
	// Loopback only: nothing of the tests leaves the machine.
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetIncludeLoopbackCandidate(true)
	if o.Net != nil {
		// The test's own namespace: whatever it holds, it reaches only
		// what the test linked it to.
		se.SetNet(o.Net)
	} else {
		se.SetInterfaceFilter(func(name string) bool { return name == "lo" })
		se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	}
	if o.TURNTLS != nil {
		dial := (&net.Dialer{}).DialContext
		if o.Net != nil {
			dial = func(_ context.Context, network, addr string) (net.Conn, error) { return o.Net.Dial(network, addr) }
		}
		se.SetICEProxyDialer(rtc.NewTURNDialer(o.ICEServers, o.TURNTLS, dial))
	}
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	if o.RelayOnly {
		// The receiver offers, so its ICE nominates; pion's agent waits
		// 2 s (1 s for a peer-reflexive candidate) before it nominates
		// a relayed pair, unless it gathers relayed candidates alone, a
		// rule pion's options path misses (v4.4.8). A browser nominates
		// at once: so does the receiver, so that the time to the first
		// frame is the path's, not pion's wait.
		se.SetRelayAcceptanceMinWait(0)
		se.SetPrflxAcceptanceMinWait(0)
	}
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se)).
		NewPeerConnection(rtc.ICEConfiguration(o.ICEServers, o.RelayOnly))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	r := &Receiver{PC: pc, Frames: make(chan Frame, 256), Audio: make(chan AudioPacket, 1024), Channels: map[string]*webrtc.DataChannel{},
		Messages: map[string]chan string{}, Closed: map[string]chan struct{}{}, tracks: make(chan *webrtc.TrackRemote, 1), relayOnly: o.RelayOnly,
		srs: map[webrtc.RTPCodecType]SenderReport{}}
	if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeVideo, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
		t.Fatal(err)
	}
	if o.Audio {
		if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			t.Fatal(err)
		}
	}
	for _, label := range o.Channels {
		init := &webrtc.DataChannelInit{}
		if label == api.ChannelPointer {
			ordered, none := false, uint16(0)
			init.Ordered, init.MaxRetransmits = &ordered, &none
		}
		dc, err := pc.CreateDataChannel(label, init)
		if err != nil {
			t.Fatal(err)
		}
		msgs, closed := make(chan string, 64), make(chan struct{})
		dc.OnMessage(func(m webrtc.DataChannelMessage) {
			select {
			case msgs <- string(m.Data):
			default:
			}
		})
		dc.OnClose(func() { close(closed) })
		r.Channels[label], r.Messages[label], r.Closed[label] = dc, msgs, closed
	}
	pc.OnTrack(func(tr *webrtc.TrackRemote, rc *webrtc.RTPReceiver) {
		go r.readReports(tr.Kind(), tr.Codec().ClockRate, rc)
		if tr.Kind() == webrtc.RTPCodecTypeAudio {
			go r.readAudio(tr)
			return
		}
		r.mu.Lock()
		r.ssrc = uint32(tr.SSRC())
		r.mu.Unlock()
		go r.read(tr)
	})
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	if o.NoCandidates {
		r.Offer = offer.SDP
		if strings.Contains(r.Offer, "a=candidate") {
			t.Fatal("the candidate-less offer has candidates")
		}
	} else {
		<-gathered
		r.Offer = pc.LocalDescription().SDP
	}
	return r
}

// Accept applies the daemon's answer.
func (r *Receiver) Accept(t testing.TB, answer string) {
	t.Helper()
	if r.relayOnly {
		answer = relayedOnly(answer)
	}
	if err := r.PC.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatalf("apply the answer: %v", err)
	}
}

// read reassembles frames: the packets of one RTP timestamp, in sequence,
// up to the marker bit. A frame with a lost packet is dropped (the next
// keyframe, which a PLI asks for, starts over).
func (r *Receiver) read(tr *webrtc.TrackRemote) {
	playoutID := 0
	var (
		buf      []byte
		ts       uint32
		nextSeq  uint16
		started  bool
		broken   bool
		hasDelay bool
	)
	for {
		pkt, _, err := tr.ReadRTP()
		if err != nil {
			close(r.Frames)
			return
		}
		if len(pkt.Payload) == 0 {
			// Padding only: a still target's keep-alive, stamped with
			// the next frame's timestamp; no part of a frame.
			continue
		}
		if playoutID == 0 {
			playoutID = r.extensionID(rtc.PlayoutDelayURI)
		}
		if !started || pkt.Timestamp != ts {
			buf, ts, broken, started = buf[:0], pkt.Timestamp, false, true
			hasDelay = true
			var vp codecs.VP8Packet
			if _, err := vp.Unmarshal(pkt.Payload); err != nil || vp.S != 1 {
				broken = true // joined mid-frame
			}
		} else if pkt.SequenceNumber != nextSeq {
			broken = true
		}
		nextSeq = pkt.SequenceNumber + 1
		if playoutID <= 0 || pkt.GetExtension(uint8(playoutID)) == nil {
			hasDelay = false
		}
		var vp codecs.VP8Packet
		payload, err := vp.Unmarshal(pkt.Payload)
		if err != nil {
			broken = true
		}
		buf = append(buf, payload...)
		if !pkt.Marker || broken || len(buf) < 3 {
			continue
		}
		f := Frame{Data: append([]byte(nil), buf...), Key: buf[0]&1 == 0, Arrived: time.Now(), Timestamp: ts, PlayoutDelay: hasDelay}
		if f.Key && len(buf) >= 10 {
			f.Width = int(binary.LittleEndian.Uint16(buf[6:]) & 0x3fff)
			f.Height = int(binary.LittleEndian.Uint16(buf[8:]) & 0x3fff)
		}
		select {
		case r.Frames <- f:
		default: // a test that stopped reading: drop
		}
		started = false
	}
}

// readAudio hands on the audio track's packets until it ends.
func (r *Receiver) readAudio(tr *webrtc.TrackRemote) {
	defer close(r.Audio)
	for {
		pkt, _, err := tr.ReadRTP()
		if err != nil {
			return
		}
		if len(pkt.Payload) == 0 {
			continue
		}
		select {
		case r.Audio <- AudioPacket{Payload: append([]byte(nil), pkt.Payload...), Timestamp: pkt.Timestamp,
			SequenceNumber: pkt.SequenceNumber, Marker: pkt.Marker, Arrived: time.Now()}:
		default: // a test that stopped reading: drop
		}
	}
}

// SenderReport is a track's RTCP sender report: the sender's wall clock
// (NTP) and the RTP time it says matches it, which is how a receiver puts
// the tracks of one stream on one clock (lip sync).
type SenderReport struct {
	NTP       time.Time
	RTP       uint32
	ClockRate uint32
	Arrived   time.Time
}

// Wall is the sender's wall time of RTP timestamp ts by this report. The
// difference is taken as an int32, so that a wrap of the 32-bit
// timestamps between the two does not matter.
func (s SenderReport) Wall(ts uint32) time.Time {
	return s.NTP.Add(time.Duration(int32(ts-s.RTP)) * time.Second / time.Duration(s.ClockRate))
}

// SenderReport answers the latest sender report of the track of kind
// (video or audio), and whether one came yet (pion sends one a second).
func (r *Receiver) SenderReport(kind webrtc.RTPCodecType) (SenderReport, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sr, ok := r.srs[kind]
	return sr, ok
}

// readReports keeps the latest sender report of a track until its
// receiver stops.
func (r *Receiver) readReports(kind webrtc.RTPCodecType, clockRate uint32, rc *webrtc.RTPReceiver) {
	for {
		pkts, _, err := rc.ReadRTCP()
		if err != nil {
			return
		}
		for _, p := range pkts {
			if sr, ok := p.(*rtcp.SenderReport); ok && clockRate > 0 {
				r.mu.Lock()
				r.srs[kind] = SenderReport{NTP: ntpTime(sr.NTPTime), RTP: sr.RTPTime, ClockRate: clockRate, Arrived: time.Now()}
				r.mu.Unlock()
			}
		}
	}
}

// ntpEpochOffset is the seconds from NTP's epoch (1900) to Unix's (1970).
const ntpEpochOffset = 2208988800

// ntpTime converts a 64-bit NTP timestamp (seconds since 1900 in the
// upper half, the fraction in the lower) to a time.
func ntpTime(ntp uint64) time.Time {
	sec, frac := int64(ntp>>32)-ntpEpochOffset, ntp&0xffffffff
	return time.Unix(sec, int64((frac*uint64(time.Second))>>32))
}

func (r *Receiver) extensionID(uri string) int {
	for _, tr := range r.PC.GetTransceivers() {
		if rc := tr.Receiver(); rc != nil {
			for _, e := range rc.GetParameters().HeaderExtensions {
				if e.URI == uri {
					return e.ID
				}
			}
		}
	}
	return -1
}

// SendPLI asks the sender for a keyframe.
func (r *Receiver) SendPLI() error {
	r.mu.Lock()
	ssrc := r.ssrc
	r.mu.Unlock()
	if ssrc == 0 {
		return errors.New("no track yet")
	}
	return r.PC.WriteRTCP([]rtcp.Packet{&rtcp.PictureLossIndication{MediaSSRC: ssrc}})
}

// NextFrame waits for the next frame (key only when key is set).
func (r *Receiver) NextFrame(t testing.TB, key bool, timeout time.Duration) Frame {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-r.Frames:
			if !ok {
				t.Fatal("the track ended")
			}
			if !key || f.Key {
				return f
			}
		case <-deadline:
			t.Fatalf("no %sframe within %s", map[bool]string{true: "key"}[key], timeout)
		}
	}
}

// WaitOpen waits until a channel opened (or fails the test).
func (r *Receiver) WaitOpen(t testing.TB, label string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for r.Channels[label].ReadyState() != webrtc.DataChannelStateOpen {
		if time.Now().After(deadline) {
			t.Fatalf("data channel %s did not open within %s (state %s)", label, timeout, r.Channels[label].ReadyState())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WHEPResult is the daemon's answer to an offer.
type WHEPResult struct {
	Status   int
	Answer   string
	Location string
	Error    *api.Error
}

// Post sends an offer to a WHEP route with a bearer (token or ticket).
func Post(ctx context.Context, url, bearer, offer string) (WHEPResult, error) {
	return PostVia(ctx, http.DefaultClient, url, bearer, offer)
}

// PostVia is Post through c (a relayed connection's client).
func PostVia(ctx context.Context, c *http.Client, url, bearer, offer string) (WHEPResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(offer))
	if err != nil {
		return WHEPResult{}, err
	}
	req.Header.Set("Content-Type", api.ContentTypeSDP)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		return WHEPResult{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return WHEPResult{}, err
	}
	res := WHEPResult{Status: resp.StatusCode, Location: resp.Header.Get("Location")}
	if resp.StatusCode == http.StatusCreated {
		res.Answer = string(b)
		return res, nil
	}
	var env api.ErrorEnvelope
	if err := json.Unmarshal(b, &env); err != nil || env.Error == nil {
		return res, fmt.Errorf("WHEP answered %d: %.200s", resp.StatusCode, b)
	}
	res.Error = env.Error
	return res, nil
}

// Delete ends a session at its Location.
func Delete(ctx context.Context, base, location, bearer string) (int, error) {
	return DeleteVia(ctx, http.DefaultClient, base, location, bearer)
}

// DeleteVia is Delete through c.
func DeleteVia(ctx context.Context, c *http.Client, base, location, bearer string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, base+location, nil)
	if err != nil {
		return 0, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
