package rtc

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/opus"
)

// AudioSource is the desktop's sound (capabilities/audio.Capture): Read
// fills one opus.FrameDuration frame of interleaved stereo samples at
// opus.SampleRate and answers when its first sample was played; Close
// ends a waiting Read.
type AudioSource interface {
	Read(ctx context.Context, frame []int16) (time.Time, error)
	Close()
}

// opusPayloadType is the RTP payload type the daemon offers Opus on
// (the one browsers use).
const opusPayloadType = 111

// opusCodec is Opus as the daemon sends it: stereo, in-band FEC and DTX
// (RFC 7587's parameters, which tell the receiver's decoder what comes).
var opusCodec = webrtc.RTPCodecCapability{
	MimeType: webrtc.MimeTypeOpus, ClockRate: opus.SampleRate, Channels: opus.Channels,
	SDPFmtpLine: "minptime=10;useinbandfec=1;usedtx=1;stereo=1;sprop-stereo=1",
}

// audio is the desktop's sound for every viewer that asked for it: one
// capture and one encoder, whose packets go out on one track per video
// stream ID, so that each viewer's audio belongs to its video's stream
// (a browser synchronises the tracks of one stream). It runs from its
// first viewer to its last.
type audio struct {
	open func() (AudioSource, error)
	log  *slog.Logger
	// onFrame, when set, is told of every frame encoded: sent, or left
	// out by DTX.
	onFrame func(sent bool, bytes int, took time.Duration)

	mu      sync.Mutex
	viewers int
	tracks  map[string]*webrtc.TrackLocalStaticRTP // by stream ID
	run     *audioRun                              // nil while nobody listens
}

// audioRun is one spell of the capture and encoder, from a first viewer
// to a last.
type audioRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func newAudio(open func() (AudioSource, error), log *slog.Logger, onFrame func(bool, int, time.Duration)) *audio {
	return &audio{open: open, log: log, onFrame: onFrame, tracks: map[string]*webrtc.TrackLocalStaticRTP{}}
}

// join counts a listener in and answers the track of its stream; the
// first listener starts the capture.
func (a *audio) join(streamID string) (*webrtc.TrackLocalStaticRTP, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tracks[streamID]
	if t == nil {
		var err error
		if t, err = webrtc.NewTrackLocalStaticRTP(opusCodec, "audio", streamID); err != nil {
			return nil, api.Errorf(api.KindEnv, "the audio track: %v", err)
		}
		a.tracks[streamID] = t
	}
	a.viewers++
	if a.run == nil {
		ctx, cancel := context.WithCancel(context.Background())
		r := &audioRun{cancel: cancel, done: make(chan struct{})}
		a.run = r
		go func() {
			defer close(r.done)
			if err := a.capture(ctx); err != nil && ctx.Err() == nil {
				// The sound server went (or the encoder failed): the
				// listeners keep their video, and the next one to join
				// starts the capture again.
				a.log.Warn("stream audio ended", "err", err)
				a.mu.Lock()
				if a.run == r {
					a.run = nil
				}
				a.mu.Unlock()
			}
		}()
	}
	return t, nil
}

// leave counts a listener out; the last one stops the capture (and waits
// for it), and the tracks no one is bound to go.
func (a *audio) leave() {
	a.mu.Lock()
	a.viewers--
	if a.viewers > 0 {
		a.mu.Unlock()
		return
	}
	r := a.run
	a.run = nil
	clear(a.tracks)
	a.mu.Unlock()
	if r != nil { // nil: it ended on its own
		r.cancel()
		<-r.done
	}
}

// listeners are the viewers that asked for the sound.
func (a *audio) listeners() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.viewers
}

// capture reads the sound, encodes it and sends each packet on every
// track until ctx ends. The RTP timestamp counts the frames by the time
// they were played, so a frame the capture dropped (it fell behind) or
// DTX left unsent leaves its gap in the timestamps, not in the sequence
// numbers: the receiver plays silence there, and counts no loss.
func (a *audio) capture(ctx context.Context) error {
	src, err := a.open()
	if err != nil {
		return err
	}
	defer src.Close()
	context.AfterFunc(ctx, src.Close)
	enc, err := opus.NewEncoder(opus.Options{})
	if err != nil {
		return err
	}
	defer enc.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	seq, ts0 := binary.BigEndian.Uint16(b[:2]), binary.BigEndian.Uint32(b[2:])
	frame := make([]int16, opus.FrameSamples*opus.Channels)
	var first time.Time
	last := int64(-1) // the frame index of the last packet sent
	silent := true    // the last frame was not sent: the next one starts a talkspurt
	quiet := 0        // frames of digital silence in a row
	for {
		at, err := src.Read(ctx, frame)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if first.IsZero() {
			first = at
		}
		// The frame's place on the stream's clock: its play time, rounded
		// to whole frames, and never before the last one sent.
		idx := max(int64((at.Sub(first)+opus.FrameDuration/2)/opus.FrameDuration), last+1)
		// Digital silence (a sink with nothing playing gives exact zeros)
		// is encoded only until DTX has settled (the decay coded, a
		// refresh sent); then neither encoded nor sent, which spares the
		// encoder's half millisecond a frame. A receiver hears no packet
		// as silence (a browser's jitter buffer mutes what it conceals).
		if quiet = quietRun(quiet, frame); quiet > settleFrames {
			if a.onFrame != nil {
				a.onFrame(false, 0, 0)
			}
			silent = true
			continue
		}
		pkt, err := enc.Encode(frame)
		if err != nil {
			return err
		}
		if a.onFrame != nil {
			a.onFrame(!pkt.DTX, len(pkt.Data), pkt.Took)
		}
		if pkt.DTX {
			silent = true
			continue
		}
		p := &rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: opusPayloadType, SequenceNumber: seq,
			Timestamp: ts0 + uint32(idx*opus.FrameSamples), Marker: silent}, Payload: pkt.Data}
		seq++
		last, silent = idx, false
		a.mu.Lock()
		tracks := make([]*webrtc.TrackLocalStaticRTP, 0, len(a.tracks))
		for _, t := range a.tracks {
			tracks = append(tracks, t)
		}
		a.mu.Unlock()
		for _, t := range tracks {
			if err := t.WriteRTP(p); err != nil && !errors.Is(err, context.Canceled) {
				a.log.Debug("stream audio write", "err", err)
			}
		}
	}
}

// settleFrames of digital silence are encoded before the rest is skipped:
// libopus codes the decay and enters DTX after 10 quiet frames, and sends
// its refresh 400 ms in.
const settleFrames = 25

// quietRun counts frame into a run of all-zero frames: the run's new
// length, 0 when frame has sound.
func quietRun(run int, frame []int16) int {
	for _, v := range frame {
		if v != 0 {
			return 0
		}
	}
	return run + 1
}
