package opus_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/media/opus/opustest"
	"github.com/trycua/cua-spacesd/media/opus/selftest"
)

// The tones of the tests: 440 Hz then 880 Hz, the right channel quieter,
// so that a swap of the channels shows.
// silence is a tone of 0 Hz.
var (
	low     = [2]selftest.Tone{{Hz: 440, DBFS: -12}, {Hz: 440, DBFS: -20}}
	high    = [2]selftest.Tone{{Hz: 880, DBFS: -12}, {Hz: 880, DBFS: -20}}
	silence [2]selftest.Tone
)

func newCodec(t testing.TB, o opus.Options) (*opus.Encoder, *opus.Decoder) {
	t.Helper()
	opustest.Require(t)
	enc, err := opus.NewEncoder(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(enc.Close)
	dec, err := opus.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dec.Close)
	return enc, dec
}

// encodeTones encodes frames of each tone pair in turn, from frame 0 on,
// and answers the packets.
func encodeTones(t testing.TB, enc *opus.Encoder, frames int, tones ...[2]selftest.Tone) []opus.Packet {
	t.Helper()
	pcm := make([]int16, opus.FrameLen)
	var pkts []opus.Packet
	for i := range frames * len(tones) {
		tone := tones[i/frames]
		selftest.Fill(pcm, i, tone[0], tone[1])
		p, err := enc.Encode(pcm)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		pkts = append(pkts, p)
	}
	return pkts
}

// decodeAll decodes every packet (nil ones as lost) into one buffer.
func decodeAll(t testing.TB, dec *opus.Decoder, pkts []opus.Packet) []int16 {
	t.Helper()
	out := make([]int16, len(pkts)*opus.FrameLen)
	for i, p := range pkts {
		n, err := dec.Decode(p.Data, out[i*opus.FrameLen:][:opus.FrameLen])
		if err != nil || n != opus.FrameSamples {
			t.Fatalf("packet %d (%d bytes): %d samples, %v", i, len(p.Data), n, err)
		}
	}
	return out
}

func TestConstants(t *testing.T) {
	if got := opus.SampleRate * opus.FrameDuration / time.Second; got != opus.FrameSamples {
		t.Errorf("FrameDuration at SampleRate is %d samples, FrameSamples %d", got, opus.FrameSamples)
	}
	if opus.FrameLen != 1920 || opus.Channels != 2 || opus.SampleRate != 48000 {
		t.Errorf("frame of %d samples, %d channels at %d Hz", opus.FrameLen, opus.Channels, opus.SampleRate)
	}
	if !(opus.MinBitrateKbps < opus.DefaultBitrateKbps && opus.DefaultBitrateKbps < opus.MaxBitrateKbps) ||
		opus.MaxBitrateKbps*1000/50/8 > opus.MaxPacketBytes {
		t.Errorf("bitrate bounds %d < %d < %d kbit/s, packets up to %d bytes", opus.MinBitrateKbps, opus.DefaultBitrateKbps, opus.MaxBitrateKbps, opus.MaxPacketBytes)
	}
}

// TestTones: 440 Hz then 880 Hz decode at their frequencies (within 2 %)
// and levels, in that order and in their channels; a steady tone is never
// taken for silence (libopus below complexity 7 left half of such a tone
// out as DTX).
func TestTones(t *testing.T) {
	const frames = 50
	enc, dec := newCodec(t, opus.Options{})
	pkts := encodeTones(t, enc, frames, low, high)
	pcm := decodeAll(t, dec, pkts)
	bytes := 0
	for i, p := range pkts {
		if p.DTX || len(p.Data) <= opus.DTXMaxBytes {
			t.Errorf("packet %d of a tone: DTX %v, %d bytes", i, p.DTX, len(p.Data))
		}
		bytes += len(p.Data)
	}
	// Half a second of each, past the lookahead and the change.
	for k, tone := range [][2]selftest.Tone{low, high} {
		part := pcm[(k*frames+selftest.SettleFrames)*opus.FrameLen : (k+1)*frames*opus.FrameLen]
		for ch := range 2 {
			got, off, err := selftest.Compare(tone[ch], part, ch)
			if err != nil {
				t.Errorf("tone %d, channel %d: %v", k+1, ch, err)
			}
			t.Logf("tone %d, channel %d: %+v, want %+v, %d frames off", k+1, ch, got, tone[ch], off)
		}
	}
	// Variable bitrate: a tone is easy, and costs less than the target.
	kbps := float64(bytes*8) / (float64(len(pkts)) * opus.FrameDuration.Seconds()) / 1000
	t.Logf("%d packets, %.1f kbit/s, %s, lookahead %v", len(pkts), kbps, opus.Version(), enc.Lookahead())
	if kbps > opus.DefaultBitrateKbps*1.1 {
		t.Errorf("%.1f kbit/s, over the target %d", kbps, opus.DefaultBitrateKbps)
	}
}

// TestDTX: silence after sound turns into DTX packets of a byte once it
// has lasted 200 ms, with a real packet every 400 ms that refreshes the
// decoder's comfort noise; they decode to near silence, both range coders
// agree on each, and the sound after the silence comes out whole.
func TestDTX(t *testing.T) {
	const frames = 100 // 2 s
	tests := []struct {
		name string
		// noise is the peak of the noise on zero, in LSBs.
		noise int
	}{
		{"digital silence", 0},
		{"noise of one LSB", 1},
	}
	// What libopus 1.3.1 answers: 10 real packets after the sound (20 for
	// the noise), then DTX but for a refresh of about 40 bytes every 20
	// frames: 86 (76) of 100 packets DTX, 768 (1177) bytes.
	const minDTX, maxBytes = 70, 2000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc, dec := newCodec(t, opus.Options{})
			// Sound first: libopus takes for silence what is far below the
			// loudest it has heard, so noise alone from the start never is.
			decodeAll(t, dec, encodeTones(t, enc, 25, high))
			rng := rand.New(rand.NewPCG(1, 2))
			in := make([]int16, opus.FrameLen)
			out := make([]int16, opus.FrameLen)
			var sizes []int
			dtx, bytes, refreshes := 0, 0, 0
			for i := range frames {
				for k := range in {
					in[k] = int16(rng.IntN(2*tt.noise+1) - tt.noise)
				}
				p, err := enc.Encode(in)
				if err != nil {
					t.Fatal(err)
				}
				sizes = append(sizes, len(p.Data))
				bytes += len(p.Data)
				if p.DTX != (len(p.Data) <= opus.DTXMaxBytes) {
					t.Fatalf("frame %d: DTX %v for %d bytes", i, p.DTX, len(p.Data))
				}
				if p.DTX {
					dtx++
				} else if dtx > 0 {
					refreshes++
				}
				if _, err := dec.Decode(p.Data, out); err != nil {
					t.Fatalf("frame %d (%d bytes): %v", i, len(p.Data), err)
				}
				if er, dr := enc.FinalRange(), dec.FinalRange(); er != dr {
					t.Fatalf("frame %d (%d bytes): range coders end in %#x and %#x", i, len(p.Data), er, dr)
				}
				if i >= frames/2 && selftest.Level(out, 0) > -50 {
					t.Fatalf("frame %d of silence decodes at %.1f dBFS", i, selftest.Level(out, 0))
				}
			}
			t.Logf("2 s: %d of %d packets DTX, %d refreshes, %d bytes (%.2f kbit/s); sizes %v", dtx, frames, refreshes, bytes, float64(bytes*8)/2/1000, sizes)
			if dtx < minDTX || bytes > maxBytes || refreshes < 3 {
				t.Errorf("%d packets DTX (want %d or more), %d bytes (want %d at most), %d refreshes (want one every 400 ms)", dtx, minDTX, bytes, maxBytes, refreshes)
			}
			// The sound after it: at once, and whole.
			pkts := encodeTones(t, enc, 25, low)
			if pkts[0].DTX {
				t.Errorf("the first frame of a tone after silence is DTX (%d bytes)", len(pkts[0].Data))
			}
			pcm := decodeAll(t, dec, pkts)[selftest.SettleFrames*opus.FrameLen:]
			for ch := range 2 {
				if got, _, err := selftest.Compare(low[ch], pcm, ch); err != nil {
					t.Errorf("the tone after silence, channel %d: %+v: %v", ch, got, err)
				}
			}
		})
	}
}

// TestFEC: a packet lost where the sound changes is recovered from the next
// packet's FEC data far better than concealment guesses it, and the
// decoder goes on with the next packet as if nothing was lost.
func TestFEC(t *testing.T) {
	const frames, lost = 25, 25 // lost: the first frame of the second tone
	enc, dec := newCodec(t, opus.Options{})
	pkts := encodeTones(t, enc, frames, low, high)
	want := decodeAll(t, dec, pkts)
	frameOf := func(pcm []int16, i int) []int16 { return pcm[i*opus.FrameLen:][:opus.FrameLen] }

	// recover decodes the packets with the lost one recovered by fix.
	recover := func(fix func(*opus.Decoder, []int16) (int, error)) []int16 {
		d, err := opus.NewDecoder()
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		out := make([]int16, len(pkts)*opus.FrameLen)
		for i, p := range pkts {
			var n int
			if i == lost {
				n, err = fix(d, frameOf(out, i))
			} else {
				n, err = d.Decode(p.Data, frameOf(out, i))
			}
			if err != nil || n != opus.FrameSamples {
				t.Fatalf("packet %d: %d samples, %v", i, n, err)
			}
		}
		return out
	}
	withFEC := recover(func(d *opus.Decoder, pcm []int16) (int, error) { return d.DecodeFEC(pkts[lost+1].Data, pcm) })
	concealed := recover(func(d *opus.Decoder, pcm []int16) (int, error) { return d.Decode(nil, pcm) })

	// snr is how close got's frame i is to the loss-free decoding, in dB.
	snr := func(got []int16, i int) float64 {
		var s, e float64
		for k, v := range frameOf(want, i) {
			d := float64(v) - float64(frameOf(got, i)[k])
			s += float64(v) * float64(v)
			e += d * d
		}
		return 10 * math.Log10(s/max(e, 1))
	}
	fec, plc := snr(withFEC, lost), snr(concealed, lost)
	t.Logf("the lost frame: %.1f dB from FEC, %.1f dB from concealment; the frame after: %.1f and %.1f dB", fec, plc, snr(withFEC, lost+1), snr(concealed, lost+1))
	if fec < 10 || fec < plc+6 {
		t.Errorf("FEC recovers the lost frame at %.1f dB, concealment at %.1f: FEC data missing or wrong", fec, plc)
	}
	// The recovered frame sounds like the tone lost (its second half:
	// the first still holds the lookahead of the tone before).
	half := frameOf(withFEC, lost)[opus.FrameLen/2:]
	if got := selftest.Frequency(half, 0); math.Abs(got-high[0].Hz) > high[0].Hz*selftest.MaxFrequencyError {
		t.Errorf("the frame FEC recovered is at %.1f Hz, the tone lost at %.0f Hz", got, high[0].Hz)
	}
	// A few frames on, the decoders agree with the loss-free one again.
	if s := snr(withFEC, lost+3); s < 20 {
		t.Errorf("three frames after the loss, %.1f dB from the loss-free decoding", s)
	}
}

// TestLookahead: a sound that starts with a frame comes out of the decoder
// Lookahead later, as a stream that keeps sound and picture together
// assumes.
func TestLookahead(t *testing.T) {
	enc, dec := newCodec(t, opus.Options{})
	if got := enc.Lookahead(); got != 6500*time.Microsecond {
		t.Errorf("lookahead %v, want 6.5 ms (libopus's for 48 kHz, APPLICATION_AUDIO)", got)
	}
	const onset = 10 // frames of silence before the tone
	pcm := decodeAll(t, dec, append(encodeTones(t, enc, onset, silence), encodeTones(t, enc, 5, low)...))
	first := -1
	for i := 0; i < len(pcm)/2; i++ {
		if math.Abs(float64(pcm[2*i])) > 500 { // a tenth of the tone's peak
			first = i
			break
		}
	}
	delay := time.Duration(first-onset*opus.FrameSamples) * time.Second / opus.SampleRate
	t.Logf("the tone starts %v after its frame (lookahead %v)", delay, enc.Lookahead())
	if d := delay - enc.Lookahead(); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("the tone starts %v after its frame, lookahead says %v", delay, enc.Lookahead())
	}
}

// TestBitrate: the bounds clamp what is asked, and a higher target makes
// bigger packets.
func TestBitrate(t *testing.T) {
	opustest.Require(t)
	mean := func(kbps int) (int, float64) {
		enc, err := opus.NewEncoder(opus.Options{BitrateKbps: kbps})
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		got := enc.Bitrate()
		bytes := 0
		pkts := encodeTones(t, enc, 25, [2]selftest.Tone{{Hz: 440, DBFS: -12}, {Hz: 660, DBFS: -12}})
		for _, p := range pkts {
			bytes += len(p.Data)
		}
		return got, float64(bytes) / float64(len(pkts))
	}
	tests := []struct{ ask, want int }{
		{0, opus.DefaultBitrateKbps},
		{1, opus.MinBitrateKbps},
		{opus.MinBitrateKbps, opus.MinBitrateKbps},
		{1 << 20, opus.MaxBitrateKbps},
	}
	sizes := map[int]float64{}
	for _, tt := range tests {
		got, size := mean(tt.ask)
		if got != tt.want {
			t.Errorf("asked for %d kbit/s, got %d, want %d", tt.ask, got, tt.want)
		}
		sizes[got] = size
	}
	t.Logf("mean packet bytes by kbit/s: %v", sizes)
	if sizes[opus.MinBitrateKbps]*3 > sizes[opus.MaxBitrateKbps] {
		t.Errorf("packets of %.0f bytes at %d kbit/s and %.0f at %d", sizes[opus.MinBitrateKbps], opus.MinBitrateKbps, sizes[opus.MaxBitrateKbps], opus.MaxBitrateKbps)
	}

	enc, _ := newCodec(t, opus.Options{})
	if err := enc.SetBitrate(opus.MinBitrateKbps); err != nil || enc.Bitrate() != opus.MinBitrateKbps {
		t.Fatalf("SetBitrate: %v, now %d", err, enc.Bitrate())
	}
	small := encodeTones(t, enc, 25, low)
	if err := enc.SetBitrate(1 << 20); err != nil || enc.Bitrate() != opus.MaxBitrateKbps {
		t.Fatalf("SetBitrate huge: %v, now %d", err, enc.Bitrate())
	}
	big := encodeTones(t, enc, 25, high)
	if a, b := len(small[24].Data), len(big[24].Data); a*3 > b {
		t.Errorf("after SetBitrate: %d bytes at %d kbit/s, %d at %d", a, opus.MinBitrateKbps, b, opus.MaxBitrateKbps)
	}
}

// TestRefused: what the codec cannot take is an invalid_argument error
// that says what was wrong, and changes nothing.
func TestRefused(t *testing.T) {
	enc, dec := newCodec(t, opus.Options{})
	pkt := encodeTones(t, enc, 1, low)[0].Data
	encodes := []struct {
		name string
		pcm  []int16
	}{
		{"no samples", nil},
		{"mono frame", make([]int16, opus.FrameSamples)},
		{"a sample short", make([]int16, opus.FrameLen-1)},
		{"a sample over", make([]int16, opus.FrameLen+1)},
		{"two frames", make([]int16, 2*opus.FrameLen)},
		{"10 ms", make([]int16, opus.FrameLen/2)},
	}
	for _, tt := range encodes {
		if p, err := enc.Encode(tt.pcm); api.KindOf(err) != api.KindInvalidArgument || p.Data != nil {
			t.Errorf("Encode %s (%d samples): %v", tt.name, len(tt.pcm), err)
		} else {
			t.Logf("Encode %s: %v", tt.name, err)
		}
	}
	decodes := []struct {
		name   string
		packet []byte
		pcm    []int16
		fec    bool
	}{
		{"no output", pkt, nil, false},
		{"odd output", pkt, make([]int16, opus.FrameLen-1), false},
		{"output shorter than the packet", pkt, make([]int16, opus.FrameLen/2), false},
		{"loss concealed in 1 ms", nil, make([]int16, 2*48), false},
		{"FEC without a packet", nil, make([]int16, opus.FrameLen), true},
		{"FEC into 1 ms", pkt, make([]int16, 2*48), true},
		{"a packet of code 3 with no frame count", []byte{0x03}, make([]int16, opus.FrameLen), false},
		{"a frame longer than the packet", []byte{0x02, 0xfc, 0x00}, make([]int16, opus.FrameLen), false},
		{"two equal frames in an odd length", []byte{0x01, 0xaa}, make([]int16, opus.FrameLen), false},
	}
	for _, tt := range decodes {
		var err error
		if tt.fec {
			_, err = dec.DecodeFEC(tt.packet, tt.pcm)
		} else {
			_, err = dec.Decode(tt.packet, tt.pcm)
		}
		if api.KindOf(err) != api.KindInvalidArgument {
			t.Errorf("Decode %s: %v", tt.name, err)
		} else {
			t.Logf("Decode %s: %v", tt.name, err)
		}
	}
	// The decoder still decodes.
	if n, err := dec.Decode(pkt, make([]int16, opus.FrameLen)); err != nil || n != opus.FrameSamples {
		t.Fatalf("after the refusals: %d samples, %v", n, err)
	}
}

// TestClosed: a closed encoder or decoder refuses work, and closing again
// is harmless.
func TestClosed(t *testing.T) {
	enc, dec := newCodec(t, opus.Options{})
	enc.Close()
	enc.Close()
	dec.Close()
	dec.Close()
	if _, err := enc.Encode(make([]int16, opus.FrameLen)); err == nil {
		t.Error("a closed encoder encoded")
	}
	if _, err := dec.Decode(nil, make([]int16, opus.FrameLen)); err == nil {
		t.Error("a closed decoder decoded")
	}
	if err := enc.SetBitrate(32); err != nil || enc.Lookahead() != 0 || enc.FinalRange() != 0 {
		t.Errorf("closed encoder: SetBitrate %v, lookahead %v", err, enc.Lookahead())
	}
}

// FuzzDecode: no packet, however made, crashes the decoder or writes past
// the output; what it answers is a whole decoded duration or an error.
func FuzzDecode(f *testing.F) {
	enc, _ := newCodec(f, opus.Options{})
	for _, p := range encodeTones(f, enc, 3, low, high) {
		f.Add(p.Data, false)
	}
	for _, p := range encodeTones(f, enc, 15, silence)[12:] {
		f.Add(p.Data, true) // silence, DTX by now
	}
	for _, seed := range [][]byte{
		{}, {0x00}, {0xff}, {0x03}, {0x03, 0x00}, {0x03, 0x7f},
		{0x01, 0x01, 0x02}, {0x02, 0xfc, 0xff, 0x00}, {0xf8, 0xff, 0xfe},
		{0x7b, 0x83, 0x05, 0x00, 0x01, 0x02, 0x03, 0x04},
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, packet []byte, fec bool) {
		dec, err := opus.NewDecoder()
		if err != nil {
			t.Fatal(err)
		}
		defer dec.Close()
		// A guard after the output: libopus must not write past it.
		buf := make([]int16, opus.MaxFrameSamples*opus.Channels+64)
		const guard = 0x5a5a
		for i := range buf {
			buf[i] = guard
		}
		pcm := buf[:opus.MaxFrameSamples*opus.Channels]
		if fec {
			pcm = buf[:opus.FrameLen]
		}
		var n int
		if fec {
			n, err = dec.DecodeFEC(packet, pcm)
		} else {
			n, err = dec.Decode(packet, pcm)
		}
		if err != nil {
			n = 0
		}
		if n < 0 || n > len(pcm)/opus.Channels {
			t.Fatalf("%d samples into room for %d", n, len(pcm)/opus.Channels)
		}
		for i, v := range buf[len(pcm):] {
			if v != guard {
				t.Fatalf("the decoder wrote past the output at %d", len(pcm)+i)
			}
		}
		// And it decodes a good packet after whatever came before.
		if n, err := dec.Decode([]byte{0xfc, 0xff, 0xfe}, make([]int16, opus.FrameLen)); err != nil || n != opus.FrameSamples {
			t.Fatalf("a good packet after this one: %d samples, %v", n, err)
		}
	})
}

// BenchmarkEncode encodes a 20 ms frame of a tone, and of silence (DTX).
// The figure beside it: 50 frames a second, so 1 % of a core is 200 µs a
// frame.
func BenchmarkEncode(b *testing.B) {
	for _, bm := range []struct {
		name string
		tone [2]selftest.Tone
	}{
		{"tone", [2]selftest.Tone{{Hz: 440, DBFS: -12}, {Hz: 660, DBFS: -12}}},
		{"silence", silence},
	} {
		b.Run(bm.name, func(b *testing.B) {
			opustest.Require(b)
			enc, err := opus.NewEncoder(opus.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer enc.Close()
			// 2 s of frames, played round: a tone that goes on.
			frames := make([][]int16, 100)
			for i := range frames {
				frames[i] = make([]int16, opus.FrameLen)
				selftest.Fill(frames[i], i, bm.tone[0], bm.tone[1])
			}
			n, bytes, dtx := 0, 0, 0
			for b.Loop() {
				p, err := enc.Encode(frames[n%len(frames)])
				if err != nil {
					b.Fatal(err)
				}
				n++
				bytes += len(p.Data)
				if p.DTX {
					dtx++
				}
			}
			b.ReportMetric(float64(bytes)/float64(n), "B/packet")
			b.ReportMetric(float64(dtx)/float64(n)*100, "%dtx")
		})
	}
}
