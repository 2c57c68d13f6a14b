//go:build cgo

package opus

/*
#cgo LDFLAGS: -lopus -lm
#include <stdlib.h>
#include <opus/opus.h>

// opus_encoder_ctl is variadic, which cgo cannot call: these wrappers
// make each request a plain function.

static OpusEncoder *enc_open(int rate, int channels, int application, int bps, int complexity, int loss, int *err) {
	OpusEncoder *e = opus_encoder_create(rate, channels, application, err);
	if (*err != OPUS_OK) return NULL;
	if ((*err = opus_encoder_ctl(e, OPUS_SET_BITRATE(bps))) != OPUS_OK ||
	    (*err = opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(complexity))) != OPUS_OK ||
	    (*err = opus_encoder_ctl(e, OPUS_SET_INBAND_FEC(1))) != OPUS_OK ||
	    (*err = opus_encoder_ctl(e, OPUS_SET_PACKET_LOSS_PERC(loss))) != OPUS_OK ||
	    (*err = opus_encoder_ctl(e, OPUS_SET_DTX(1))) != OPUS_OK) {
		opus_encoder_destroy(e);
		return NULL;
	}
	return e;
}

static int enc_set_bitrate(OpusEncoder *e, int bps) {
	return opus_encoder_ctl(e, OPUS_SET_BITRATE(bps));
}

static unsigned int enc_final_range(OpusEncoder *e) {
	opus_uint32 r = 0;
	opus_encoder_ctl(e, OPUS_GET_FINAL_RANGE(&r));
	return r;
}

static unsigned int dec_final_range(OpusDecoder *d) {
	opus_uint32 r = 0;
	opus_decoder_ctl(d, OPUS_GET_FINAL_RANGE(&r));
	return r;
}

static int enc_lookahead(OpusEncoder *e) {
	opus_int32 n = 0;
	if (opus_encoder_ctl(e, OPUS_GET_LOOKAHEAD(&n)) != OPUS_OK) return -1;
	return n;
}
*/
import "C"

import (
	"bytes"
	"fmt"
	"time"
	"unsafe"

	"github.com/trycua/cua-spacesd/api"
)

// Available says this build has the encoder.
const Available = true

// Version is libopus's version string ("libopus 1.3.1").
func Version() string { return C.GoString(C.opus_get_version_string()) }

// application is libopus's tuning: OPUS_APPLICATION_AUDIO, for a desktop's
// sound that is music and video as much as speech. RESTRICTED_LOWDELAY
// would save 4 ms of lookahead (2.5 ms against 6.5, far less than a
// receiver's jitter buffer) and give up SILK, and with it in-band FEC and
// DTX (application_test.go measures both).
const application = C.OPUS_APPLICATION_AUDIO

// applicationLowDelay is the tuning left out, for the test that compares.
const applicationLowDelay = C.OPUS_APPLICATION_RESTRICTED_LOWDELAY

// strerror is libopus's sentence for an error code.
func strerror(code C.int) string { return C.GoString(C.opus_strerror(code)) }

// Encoder is one libopus encoder of 48 kHz stereo. It is for one goroutine
// at a time.
type Encoder struct {
	e    *C.OpusEncoder
	kbps int
	// out is where libopus writes a packet before Encode copies it out:
	// Go memory holding no pointers, which cgo lets C write.
	out [MaxPacketBytes]byte
}

// NewEncoder opens an encoder with in-band FEC (planned for LossPercent
// loss) and DTX on, at o's bitrate.
func NewEncoder(o Options) (*Encoder, error) {
	return newEncoder(o, application)
}

func newEncoder(o Options, app int) (*Encoder, error) {
	kbps := clampBitrate(o.BitrateKbps)
	var code C.int
	e := C.enc_open(SampleRate, Channels, C.int(app), C.int(kbps*1000), complexity, LossPercent, &code)
	if e == nil {
		return nil, fmt.Errorf("opus: open a %d Hz stereo encoder: %s", SampleRate, strerror(code))
	}
	return &Encoder{e: e, kbps: kbps}, nil
}

func clampBitrate(kbps int) int {
	if kbps == 0 {
		return DefaultBitrateKbps
	}
	return min(max(kbps, MinBitrateKbps), MaxBitrateKbps)
}

// Encode encodes one frame: FrameLen interleaved samples (FrameDuration of
// stereo at SampleRate). Silence after 200 ms answers DTX packets (see
// Packet.DTX), but costs libopus nearly the time of sound (0.3 ms a frame
// against 0.37, BenchmarkEncode): it analyses each frame to decide. A
// caller that knows there is nothing to play (a suspended sink) should
// not encode at all. Skipping libopus for digital silence was tried and
// left out: without the comfort-noise refreshes libopus sends every
// 400 ms, a decoder kept hissing at -60 dBFS after a loud sound.
func (e *Encoder) Encode(pcm []int16) (Packet, error) {
	if len(pcm) != FrameLen {
		return Packet{}, api.Errorf(api.KindInvalidArgument, "opus: a frame is %d interleaved samples (%s of stereo at %d Hz), got %d", FrameLen, FrameDuration, SampleRate, len(pcm))
	}
	if e.e == nil {
		return Packet{}, fmt.Errorf("opus: encoder closed")
	}
	start := time.Now()
	n := C.opus_encode(e.e, (*C.opus_int16)(unsafe.Pointer(&pcm[0])), FrameSamples, (*C.uchar)(unsafe.Pointer(&e.out[0])), C.opus_int32(len(e.out)))
	if n < 0 {
		return Packet{}, fmt.Errorf("opus: encode: %s", strerror(C.int(n)))
	}
	return Packet{Data: bytes.Clone(e.out[:n]), DTX: n <= DTXMaxBytes, Took: time.Since(start)}, nil
}

// SetBitrate changes the target bitrate (clamped to the bounds) from the
// next frame on.
func (e *Encoder) SetBitrate(kbps int) error {
	kbps = clampBitrate(kbps)
	if e.e == nil || kbps == e.kbps {
		return nil
	}
	if rc := C.enc_set_bitrate(e.e, C.int(kbps*1000)); rc != C.OPUS_OK {
		return fmt.Errorf("opus: set bitrate %d kbit/s: %s", kbps, strerror(rc))
	}
	e.kbps = kbps
	return nil
}

// Bitrate is the current target in kbit/s.
func (e *Encoder) Bitrate() int { return e.kbps }

// Lookahead is the encoder's algorithmic delay: a sound reaches the
// decoder's output this much after the frame it went in with, which a
// stream that keeps sound and picture in sync accounts for.
func (e *Encoder) Lookahead() time.Duration {
	if e.e == nil {
		return 0
	}
	n := C.enc_lookahead(e.e)
	if n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second / SampleRate
}

// FinalRange is the state libopus's range coder ended the last packet in.
// A decoder that read that packet exactly as it was written ends in the
// same state (Decoder.FinalRange): Opus's own check of a bitstream
// (opus_demo's), blind to what the packet sounds like. A DTX packet of one
// byte codes nothing and answers 0.
func (e *Encoder) FinalRange() uint32 {
	if e.e == nil {
		return 0
	}
	return uint32(C.enc_final_range(e.e))
}

// Close frees the encoder.
func (e *Encoder) Close() {
	if e.e != nil {
		C.opus_encoder_destroy(e.e)
		e.e = nil
	}
}

// Decoder decodes Opus to 48 kHz stereo. For the tests and the self-test:
// the daemon only encodes.
type Decoder struct{ d *C.OpusDecoder }

// NewDecoder opens a decoder.
func NewDecoder() (*Decoder, error) {
	var code C.int
	d := C.opus_decoder_create(SampleRate, Channels, &code)
	if d == nil || code != C.OPUS_OK {
		return nil, fmt.Errorf("opus: open a %d Hz stereo decoder: %s", SampleRate, strerror(code))
	}
	return &Decoder{d: d}, nil
}

// Decode decodes packet into pcm (interleaved stereo) and answers the
// samples per channel it wrote. pcm must hold the packet's duration: a
// buffer of MaxFrameSamples*Channels decodes any packet. A nil (or empty)
// packet is one lost: the decoder conceals it with exactly
// len(pcm)/Channels samples per channel, which must be a whole number of
// 2.5 ms steps (FrameLen for one lost 20 ms frame).
func (d *Decoder) Decode(packet []byte, pcm []int16) (int, error) {
	return d.decode(packet, pcm, false)
}

// DecodeFEC recovers the packet lost just before packet from the FEC data
// packet carries, into pcm, which must be exactly the lost packet's
// duration (FrameLen for a 20 ms frame). Without FEC data in packet (it was
// coded in CELT mode, or the encoder saw no need) the decoder conceals the
// loss instead; either way the next call decodes packet itself.
func (d *Decoder) DecodeFEC(packet []byte, pcm []int16) (int, error) {
	if len(packet) == 0 {
		return 0, api.Errorf(api.KindInvalidArgument, "opus: FEC needs the packet after the lost one, got none")
	}
	return d.decode(packet, pcm, true)
}

// concealStep is the unit of a concealed duration: libopus conceals (and
// decodes FEC) in whole 2.5 ms steps.
const concealStep = SampleRate / 400

func (d *Decoder) decode(packet []byte, pcm []int16, fec bool) (int, error) {
	if d.d == nil {
		return 0, fmt.Errorf("opus: decoder closed")
	}
	samples := len(pcm) / Channels
	lost := len(packet) == 0
	switch {
	case len(pcm)%Channels != 0 || samples == 0:
		return 0, api.Errorf(api.KindInvalidArgument, "opus: the output holds %d samples, not a whole number (>0) of stereo pairs", len(pcm))
	case (lost || fec) && samples%concealStep != 0:
		return 0, api.Errorf(api.KindInvalidArgument, "opus: a lost packet is concealed in steps of 2.5 ms (%d samples per channel), and the output holds %d", concealStep, samples)
	}
	var data *C.uchar
	if !lost {
		data = (*C.uchar)(unsafe.Pointer(&packet[0]))
	}
	flag := C.int(0)
	if fec {
		flag = 1
	}
	n := C.opus_decode(d.d, data, C.opus_int32(len(packet)), (*C.opus_int16)(unsafe.Pointer(&pcm[0])), C.int(samples), flag)
	switch {
	case n == C.OPUS_INVALID_PACKET:
		return 0, api.Errorf(api.KindInvalidArgument, "opus: decode a packet of %d bytes: %s", len(packet), strerror(n))
	case n == C.OPUS_BUFFER_TOO_SMALL:
		return 0, api.Errorf(api.KindInvalidArgument, "opus: the packet of %d bytes decodes to more than the %d samples per channel the output holds", len(packet), samples)
	case n < 0:
		return 0, fmt.Errorf("opus: decode a packet of %d bytes: %s", len(packet), strerror(n))
	}
	return int(n), nil
}

// FinalRange is the state the range decoder ended the last packet in (see
// Encoder.FinalRange).
func (d *Decoder) FinalRange() uint32 {
	if d.d == nil {
		return 0
	}
	return uint32(C.dec_final_range(d.d))
}

// Close frees the decoder.
func (d *Decoder) Close() {
	if d.d != nil {
		C.opus_decoder_destroy(d.d)
		d.d = nil
	}
}
