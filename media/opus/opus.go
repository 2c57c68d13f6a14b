// Package opus encodes the desktop's sound to Opus for the streams, with
// libopus set for a live stream a person listens to (48 kHz stereo, 20 ms
// frames, in-band FEC, DTX), and decodes Opus for the tests and the
// self-test that check what a listener hears.
//
// libopus is C: a build with cgo and Debian's libopus-dev has it (statically
// linked by make build, beside libvpx); any other build (CGO_ENABLED=0, as
// make cross) has a stub whose Available is false and whose calls answer
// Limitation.
package opus

import (
	"errors"
	"time"
)

// The one format the daemon encodes: what WebRTC's Opus carries (RFC 7587
// fixes the RTP clock at 48 kHz whatever the audio's bandwidth) and what
// the sound server hands the capture.
const (
	SampleRate = 48000
	Channels   = 2
	// FrameDuration is one packet's sound: 20 ms is WebRTC's and libopus's
	// usual packet, long enough for SILK (and so FEC and DTX, which need
	// frames of 10 ms or more) and short enough to keep latency low.
	FrameDuration = 20 * time.Millisecond
	// FrameSamples is one frame's samples per channel: FrameDuration at
	// SampleRate, untyped so that it counts samples in any integer type.
	FrameSamples = SampleRate * 20 / 1000
	// FrameLen is one frame's interleaved samples (left, right, left...),
	// the length Encode takes.
	FrameLen = FrameSamples * Channels
)

// MaxFrameSamples is the longest a packet may decode to, per channel:
// 120 ms, the longest packet RFC 6716 allows. A decoder's buffer this long
// decodes any packet, whoever encoded it.
const MaxFrameSamples = SampleRate * 120 / 1000

// MaxPacketBytes bounds one encoded 20 ms packet: a TOC byte and one frame
// of at most 1275 bytes (RFC 6716 §3.2.1), which libopus's 510 kbit/s cap
// fills exactly.
const MaxPacketBytes = 1 + 1275

// Bitrate bounds of the sound in kbit/s, between which a caller (the
// stream's congestion control) may move the target. DefaultBitrateKbps is
// issue 28's: room for stereo music and its FEC. At MinBitrateKbps libopus
// still codes a mix of tones full band (hybrid mode), coarser; below it
// the sound is not worth its packets. MaxBitrateKbps, twice the default,
// is as much as a desktop's sound is worth beside its picture. All are
// small beside the video's floor (300).
const (
	MinBitrateKbps     = 16
	DefaultBitrateKbps = 64
	MaxBitrateKbps     = 128
)

// LossPercent is the packet loss the encoder plans its in-band FEC for.
// libopus codes FEC only when told to expect loss: at 0 it codes none even
// with FEC on (TestFEC then fails). 10 % is what a poor Wi-Fi link loses.
// It also leans libopus to SILK and hybrid modes, the ones with FEC, for
// music as much as speech at the default bitrate; FEC data covers SILK's
// band (up to 8 kHz), and a lost packet's higher band is concealed.
const LossPercent = 10

// complexity is libopus's effort (0 to 10, higher better and slower),
// measured on this project's 2-vCPU test machine at 64 kbit/s: a frame of
// a tone takes 0.37 ms at 8 to 10 (under 2 % of one core for 50 frames a
// second), 0.28 ms at 7, 0.19 ms at 5. Below 7 libopus skips its signal
// analysis, and its voice detector then took half the frames of a steady
// tone for silence and left them out as DTX (TestTones holds that); 8 to
// 10 cost the same within 5 % and code the tone 2 dB closer than 7. So 10.
const complexity = 10

// DTXMaxBytes is the longest packet DTX answers for a frame that need not
// be sent: libopus codes a silent frame it wants left out as its TOC byte
// alone (or two bytes), which carries no sound. A receiver's decoder fills
// the gap with comfort noise or silence, and libopus still answers a real
// packet now and then (every 400 ms in SILK mode) to refresh that noise.
const DTXMaxBytes = 2

// Codec is the name the sound's codec has in the answers of the daemon.
const Codec = "opus"

// The sentences the feature desktop_audio answers in a build without the
// encoder (Limitation is the one of this build's OS), as media/vp8's.
const (
	LimitationLinux = "built without an audio encoder: this cua-spacesd was built without cgo and libopus (CGO_ENABLED=0); use the release build, or run make build on Linux with a C compiler, libvpx-dev and libopus-dev installed"
	LimitationOther = "built without an audio encoder: the macOS builds of cua-spacesd are built without cgo and have none; the Linux release builds stream the desktop's sound"
)

// ErrUnavailable is what every call of the stub answers.
var ErrUnavailable = errors.New(Limitation)

// Options configure an Encoder.
type Options struct {
	// BitrateKbps is the initial target; 0 = DefaultBitrateKbps.
	BitrateKbps int
}

// Packet is one encoded 20 ms frame.
type Packet struct {
	// Data is the Opus packet, a copy the caller owns.
	Data []byte
	// DTX says the frame is silence the encoder asks not to send (Data is
	// at most DTXMaxBytes long). A sender skips it and lets the next sent
	// packet's RTP timestamp show the gap (and marks that packet as the
	// start of a talkspurt); sending it anyway is valid Opus, only wasted.
	DTX bool
	// Took is the time the encoder spent on the frame.
	Took time.Duration
}
