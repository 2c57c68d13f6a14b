// Package selftest proves the Opus encoder of this build where it runs,
// with no sound server: it encodes tones of known frequency and level, a
// different one in each channel and then the two swapped, and a second of
// silence; decodes them with libopus; and measures what comes out.
//
// Two checks of different kinds: every packet's range coder must end in
// the same state in the decoder as in the encoder (Opus's own bitstream
// check), and each channel's decoded tone must have the frequency and the
// level that went in, measured from the samples alone. A bitstream the
// decoder reads otherwise than the encoder wrote it (a broken cross build
// of the entropy coder) fails the first; a well-formed bitstream of the
// wrong sound (a SIMD path wrong on this CPU, channels swapped, a wrong
// rate or gain) fails the second. The silence must come out mostly as DTX
// packets, which proves the encoder's settings as much as its code.
package selftest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/trycua/cua-spacesd/media/opus"
)

// Tolerances of the measured tones: a 2 % frequency error is a third of a
// semitone, far more than the measurement's own error (under 0.1 % on a
// clean tone) and far less than a wrong sample rate or a swapped channel
// (an octave here); 3 dB of level is what a wrong gain or a tone left out
// of one channel exceeds. At the default bitrate these tones decode within
// 0.1 % and 0.2 dB (libopus 1.3.1, amd64 and arm64).
const (
	MaxFrequencyError = 0.02
	MaxLevelErrorDB   = 3
)

// MaxOffFrames is the share of a tone's frames that may decode off it
// (Compare says why any may).
const MaxOffFrames = 0.25

// SegmentFrames is the length of each tone, in 20 ms frames: 500 ms.
// SettleFrames of each are left out of the measurement: the decoder's
// output lags the input by the encoder's lookahead, and a tone that just
// changed takes a frame or two to settle.
const (
	SegmentFrames = 25
	SettleFrames  = 5
)

// SilenceFrames is the second of silence after the tones. libopus answers
// DTX packets once a silence has lasted 200 ms, then one real packet every
// 400 ms: 39 of these 50 frames. At least MinDTXFrames must be DTX.
const (
	SilenceFrames = 50
	MinDTXFrames  = SilenceFrames / 2
)

// SilenceDBFS is the level reported for digital silence (minus infinity in
// theory; JSON has no infinity).
const SilenceDBFS = -120

// Tone is a sine of a frequency and a level (dBFS: a full-scale sine is 0).
type Tone struct {
	Hz   float64 `json:"hz"`
	DBFS float64 `json:"dbfs"`
}

// segment is one step of the test sequence: a tone in each channel.
type segment struct {
	name        string
	left, right Tone
}

// sequence: 440 Hz on the left and 880 on the right, then the other way
// round; the right channel 6 dB quieter throughout, so that a swap of the
// channels changes both figures.
func sequence() []segment {
	a, b := 440.0, 880.0
	return []segment{
		{"440 Hz left, 880 Hz right", Tone{a, -12}, Tone{b, -18}},
		{"880 Hz left, 440 Hz right", Tone{b, -12}, Tone{a, -18}},
	}
}

// Check is one channel of one segment, decoded and measured.
type Check struct {
	Segment string `json:"segment"`
	Channel string `json:"channel"`
	Want    Tone   `json:"want"`
	// Got is the median of the frames' measures; OffFrames counts the
	// frames off Want by more than the tolerances.
	Got       Tone `json:"got"`
	Frames    int  `json:"frames"`
	OffFrames int  `json:"off_frames"`
	// Packets and Bytes are the segment's, both channels together.
	Packets int `json:"packets"`
	Bytes   int `json:"bytes"`
}

// Silence is what the second of silence became.
type Silence struct {
	Packets int `json:"packets"`
	// DTX is how many of them were DTX packets (not sent on a stream).
	DTX   int `json:"dtx"`
	Bytes int `json:"bytes"`
}

// Report is what the self-test did, complete when Run succeeds and up to
// the failure when it does not.
type Report struct {
	// Encoder is the encoder's name and version ("libopus 1.3.1").
	Encoder     string `json:"encoder"`
	SampleRate  int    `json:"sample_rate"`
	Channels    int    `json:"channels"`
	BitrateKbps int    `json:"bitrate_kbps"`
	// Packets is how many packets were encoded, decoded and their range
	// coders' final states compared.
	Packets int     `json:"packets"`
	Checks  []Check `json:"checks"`
	Silence Silence `json:"silence"`
}

// Run runs the self-test. In a build without the encoder it answers an
// error that wraps opus.ErrUnavailable (and says why).
func Run(ctx context.Context) (Report, error) {
	rep := Report{SampleRate: opus.SampleRate, Channels: opus.Channels}
	if opus.Available {
		rep.Encoder = opus.Version()
	}
	enc, err := opus.NewEncoder(opus.Options{})
	if errors.Is(err, opus.ErrUnavailable) {
		return rep, err // says why already
	}
	if err != nil {
		return rep, fmt.Errorf("open the encoder: %w", err)
	}
	defer enc.Close()
	rep.BitrateKbps = enc.Bitrate()
	dec, err := opus.NewDecoder()
	if err != nil {
		return rep, fmt.Errorf("open libopus's decoder: %w", err)
	}
	defer dec.Close()

	in := make([]int16, opus.FrameLen)
	out := make([]int16, opus.FrameLen)
	frame := 0
	// roundTrip encodes in as the next frame, decodes it into out and
	// checks the two range coders agree.
	roundTrip := func() (opus.Packet, error) {
		if err := ctx.Err(); err != nil {
			return opus.Packet{}, err
		}
		frame++
		pkt, err := enc.Encode(in)
		if err != nil {
			return pkt, fmt.Errorf("frame %d: %w", frame, err)
		}
		n, err := dec.Decode(pkt.Data, out)
		if err != nil {
			return pkt, fmt.Errorf("frame %d (%d bytes): libopus's decoder: %w", frame, len(pkt.Data), err)
		}
		if n != opus.FrameSamples {
			return pkt, fmt.Errorf("frame %d decoded to %d samples per channel, encoded %d", frame, n, opus.FrameSamples)
		}
		if er, dr := enc.FinalRange(), dec.FinalRange(); er != dr {
			return pkt, fmt.Errorf("frame %d (%d bytes): the decoder's range coder ended in state %#x, the encoder's in %#x: the bitstream is not what the encoder meant", frame, len(pkt.Data), dr, er)
		}
		rep.Packets++
		return pkt, nil
	}

	for _, s := range sequence() {
		var decoded []int16
		packets, bytes := 0, 0
		for i := range SegmentFrames {
			Fill(in, frame, s.left, s.right)
			pkt, err := roundTrip()
			if err != nil {
				return rep, fmt.Errorf("%s: %w", s.name, err)
			}
			packets++
			bytes += len(pkt.Data)
			if i >= SettleFrames {
				decoded = append(decoded, out...)
			}
		}
		for ch, want := range []Tone{s.left, s.right} {
			c := Check{Segment: s.name, Channel: channelName(ch), Want: want, Frames: SegmentFrames - SettleFrames, Packets: packets, Bytes: bytes}
			c.Got, c.OffFrames, err = Compare(want, decoded, ch)
			rep.Checks = append(rep.Checks, c)
			if err != nil {
				return rep, fmt.Errorf("%s, %s channel: %w", s.name, c.Channel, err)
			}
		}
	}

	clear(in)
	for range SilenceFrames {
		pkt, err := roundTrip()
		if err != nil {
			return rep, fmt.Errorf("silence: %w", err)
		}
		rep.Silence.Packets++
		rep.Silence.Bytes += len(pkt.Data)
		if pkt.DTX {
			rep.Silence.DTX++
		}
	}
	if rep.Silence.DTX < MinDTXFrames {
		return rep, fmt.Errorf("silence: %d of %d frames came out as DTX packets, want %d or more: the encoder sends silence it should leave out", rep.Silence.DTX, SilenceFrames, MinDTXFrames)
	}
	return rep, nil
}

func channelName(ch int) string { return [...]string{"left", "right"}[ch] }

// Compare measures one channel of interleaved stereo pcm frame by frame
// (opus.FrameLen samples each; a shorter tail is left out) and answers
// the median of the frames' frequencies and levels, how many frames were
// off the tone wanted by more than the tolerances, and an error when the
// medians are off or more than MaxOffFrames of the frames are. A median,
// because libopus's stereo coding may narrow the image for a frame or two
// where the channels differ much (its arm64 build did for 2 frames of 20
// of these tones, decoded alike on either arch): a codec's decision, not a
// broken build, which garbles every frame or many.
func Compare(want Tone, pcm []int16, channel int) (got Tone, off int, err error) {
	frames := len(pcm) / opus.FrameLen
	if frames == 0 {
		return got, 0, fmt.Errorf("no whole frame to measure (%d samples)", len(pcm))
	}
	hz, db := make([]float64, frames), make([]float64, frames)
	for i := range frames {
		f := pcm[i*opus.FrameLen:][:opus.FrameLen]
		hz[i], db[i] = Frequency(f, channel), Level(f, channel)
		if !near(want, Tone{hz[i], db[i]}) {
			off++
		}
	}
	// Rounded as the report shows them: a hundredth of a Hz or dB is
	// finer than anything the check tells apart.
	round := func(v float64) float64 { return math.Round(v*100) / 100 }
	got = Tone{Hz: round(median(hz)), DBFS: round(median(db))}
	switch {
	case math.Abs(got.Hz-want.Hz) > MaxFrequencyError*want.Hz:
		return got, off, fmt.Errorf("the tone decodes at %.1f Hz, encoded at %.0f Hz (more than %.0f %% off): the sound is wrong", got.Hz, want.Hz, MaxFrequencyError*100)
	case math.Abs(got.DBFS-want.DBFS) > MaxLevelErrorDB:
		return got, off, fmt.Errorf("the tone decodes at %.1f dBFS, encoded at %.1f (more than %d dB off): the sound is wrong", got.DBFS, want.DBFS, MaxLevelErrorDB)
	case float64(off) > float64(frames)*MaxOffFrames:
		return got, off, fmt.Errorf("%d of %d frames decode off the tone (%.0f Hz, %.1f dBFS), more than %.0f %%: the sound is garbled", off, frames, want.Hz, want.DBFS, MaxOffFrames*100)
	}
	return got, off, nil
}

// near says whether got is within the tolerances of want.
func near(want, got Tone) bool {
	return math.Abs(got.Hz-want.Hz) <= MaxFrequencyError*want.Hz && math.Abs(got.DBFS-want.DBFS) <= MaxLevelErrorDB
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Fill writes frame i of a tone in each channel into pcm (interleaved
// stereo, opus.FrameLen samples): the samples from i*opus.FrameSamples
// on, so that consecutive frames join without a click.
func Fill(pcm []int16, i int, left, right Tone) {
	for s := range len(pcm) / opus.Channels {
		t := float64(i*opus.FrameSamples+s) / opus.SampleRate
		for ch, tone := range []Tone{left, right} {
			amp := math.MaxInt16 * math.Pow(10, tone.DBFS/20)
			pcm[s*opus.Channels+ch] = int16(math.Round(amp * math.Sin(2*math.Pi*tone.Hz*t)))
		}
	}
}

// Frequency is the frequency, in Hz, of the tone in one channel of
// interleaved stereo pcm at opus.SampleRate, from its rising zero
// crossings (each placed between its two samples by linear interpolation);
// 0 when there are fewer than two.
func Frequency(pcm []int16, channel int) float64 {
	n := len(pcm) / opus.Channels
	at := func(i int) float64 { return float64(pcm[i*opus.Channels+channel]) }
	peak := 0.0
	for i := range n {
		peak = max(peak, math.Abs(at(i)))
	}
	// A crossing counts only once the signal has been below -h since the
	// last one: coding noise near zero adds no crossings of its own.
	h := peak / 4
	var first, last float64
	crossings := 0
	armed := false
	for i := 1; i < n; i++ {
		a, b := at(i-1), at(i)
		if b < -h {
			armed = true
		}
		if !armed || a >= 0 || b < 0 {
			continue
		}
		t := float64(i-1) + a/(a-b)
		if crossings == 0 {
			first = t
		}
		last = t
		crossings++
		armed = false
	}
	if crossings < 2 {
		return 0
	}
	return float64(crossings-1) * opus.SampleRate / (last - first)
}

// Level is the RMS level of one channel of interleaved stereo pcm in dBFS,
// where a full-scale sine is 0 (AES17); digital silence is SilenceDBFS.
func Level(pcm []int16, channel int) float64 {
	var sum float64
	n := len(pcm) / opus.Channels
	for i := range n {
		v := float64(pcm[i*opus.Channels+channel])
		sum += v * v
	}
	if sum == 0 || n == 0 {
		return SilenceDBFS
	}
	rms := math.Sqrt(sum / float64(n))
	return max(20*math.Log10(rms*math.Sqrt2/math.MaxInt16), SilenceDBFS)
}
