// Package audio is the desktop audio capability of cua-spacesd: it
// captures the mix the guest's sound server plays, from the default sink's
// monitor, in 20 ms frames stamped with the time they were played, for
// the stream. It speaks PulseAudio's native protocol in Go (internal/pulse:
// no cgo, the binary stays static), so it works with PulseAudio and with
// PipeWire's pipewire-pulse alike. It starts no sound server itself,
// but pulseserver's private PulseAudio, which the daemon starts beside
// its own X server (--xvfb) and the tests use.
//
// A Capture is one connection and one record stream. It does not
// reconnect: a server that goes away ends it with an error of kind env,
// and the caller opens a new one when it wants to.
package audio

import (
	"log/slog"
	"strings"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// The format of every frame: interleaved stereo (left, right), signed
// 16-bit little endian as the server sends it, at 48 kHz (Opus's rate);
// the server converts whatever its sink plays.
const (
	SampleRate = 48000
	Channels   = 2
	// FrameSamples is a frame's samples per channel: 20 ms.
	FrameSamples = 960
	// FrameDuration is a frame's length.
	FrameDuration = FrameSamples * time.Second / SampleRate
	// FrameLen is a frame's int16 values (all channels).
	FrameLen = FrameSamples * Channels
	// bytesPerFrame is one sample of each channel on the wire (a frame in
	// PulseAudio's sense).
	bytesPerFrame = 2 * Channels
)

// Limits of a capture.
const (
	// MaxQueue is the most audio a Capture holds for a reader that falls
	// behind; beyond it the oldest is dropped (and counted), so a slow
	// reader costs neither memory nor latency.
	MaxQueue = 200 * time.Millisecond
	// Fragment is the block size asked of the server: with the source
	// run at this latency too, a sound reaches us about 10-20 ms after it
	// is played, in 100 wake-ups a second.
	Fragment = 10 * time.Millisecond
	// ProbeTimeout bounds Probe: the daemon calls it when it lists its
	// features, and a sound server that does not answer is as good as
	// none.
	ProbeTimeout = 2 * time.Second
	// openTimeout bounds Open (connect, handshake, stream set-up).
	openTimeout = 5 * time.Second
	// latencyRefresh is how often a capture asks the server for the
	// stream's latency, which moves when the sink's other clients ask
	// for another (and falls from 2 s to the fragment's once an idle null
	// sink serves us): a request on the connection it has, cheap beside
	// the blocks it receives.
	latencyRefresh = 2 * time.Second
	// latencyReadings is how many of the server's latest answers the
	// correction takes the largest of.
	latencyReadings = 3
	// dropLogInterval spaces the warnings of a reader that falls behind.
	dropLogInterval = 10 * time.Second
)

// Options configure Open and Probe.
type Options struct {
	// Server is the sound server's address in PULSE_SERVER's syntax
	// ("unix:/run/user/1000/pulse/native", "tcp:host:4713"); "" looks where
	// libpulse does: $PULSE_SERVER, else $XDG_RUNTIME_DIR/pulse/native,
	// else /run/user/UID/pulse/native, else /var/run/pulse/native.
	Server string
	// Source is the source to record; "" = the default sink's monitor,
	// what the desktop plays.
	Source string
	Logger *slog.Logger
}

// check refuses options no server could take.
func (o Options) check() error {
	if strings.IndexByte(o.Source, 0) >= 0 {
		return api.Errorf(api.KindInvalidArgument, "audio: source %q holds a NUL byte", o.Source)
	}
	if strings.IndexByte(o.Server, 0) >= 0 {
		return api.Errorf(api.KindInvalidArgument, "audio: sound server address %q holds a NUL byte", o.Server)
	}
	return nil
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// framesDuration is the length of n frames (samples per channel), exact
// to the nanosecond's floor without overflow for any stream's age.
func framesDuration(n int64) time.Duration {
	sec, rem := n/SampleRate, n%SampleRate
	return time.Duration(sec)*time.Second + time.Duration(rem)*time.Second/SampleRate
}
