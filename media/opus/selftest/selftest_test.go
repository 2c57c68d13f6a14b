package selftest

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/trycua/cua-spacesd/media/opus"
	"github.com/trycua/cua-spacesd/media/opus/opustest"
)

// TestRun: with the encoder, every tone decodes at its frequency and level
// in its channel and the silence mostly as DTX; without it, Run says the
// build has none.
func TestRun(t *testing.T) {
	rep, err := Run(t.Context())
	if !opus.Available && !errors.Is(err, opus.ErrUnavailable) {
		t.Fatalf("Run without an encoder: %v, want ErrUnavailable", err)
	}
	opustest.Require(t)
	if err != nil {
		t.Fatalf("Run: %v (report %+v)", err, rep)
	}
	if len(rep.Checks) != 2*len(sequence()) {
		t.Fatalf("checks %+v, want two a segment", rep.Checks)
	}
	for i, c := range rep.Checks {
		s := sequence()[i/2]
		want := []Tone{s.left, s.right}[i%2]
		if c.Segment != s.name || c.Channel != channelName(i%2) || c.Want != want || c.Packets != SegmentFrames || c.Bytes == 0 {
			t.Errorf("check %d: %+v, want %s %s %+v", i, c, s.name, channelName(i%2), want)
		}
		t.Logf("%s, %s: %+v, %d of %d frames off", c.Segment, c.Channel, c.Got, c.OffFrames, c.Frames)
	}
	if rep.Packets != len(sequence())*SegmentFrames+SilenceFrames || rep.Silence.Packets != SilenceFrames {
		t.Errorf("%d packets (%d of silence)", rep.Packets, rep.Silence.Packets)
	}
	if rep.Silence.DTX < MinDTXFrames || rep.Silence.Bytes >= rep.Checks[0].Bytes/4 {
		t.Errorf("silence: %+v against a tone of %d bytes", rep.Silence, rep.Checks[0].Bytes)
	}
	if rep.Encoder != opus.Version() || rep.BitrateKbps != opus.DefaultBitrateKbps || rep.SampleRate != opus.SampleRate || rep.Channels != 2 {
		t.Errorf("report %+v", rep)
	}
}

// TestRunCancelled: a cancelled context ends the test before any frame.
func TestRunCancelled(t *testing.T) {
	if !opus.Available {
		t.Skip("no Opus encoder in this build: Run ends before the context matters")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if rep, err := Run(ctx); !errors.Is(err, context.Canceled) || rep.Packets != 0 {
		t.Fatalf("Run with a cancelled context: %v after %d packets", err, rep.Packets)
	}
}

// TestCompareRefusesWrongSound: the measurement the self-test rests on
// tells the right sound from the wrong ones a broken encoder or decoder
// would give. It needs no encoder: the "decoded" sound is made here, exact
// or spoiled.
func TestCompareRefusesWrongSound(t *testing.T) {
	const frames = SegmentFrames - SettleFrames
	left, right := Tone{440, -12}, Tone{880, -18}
	sound := func(l, r Tone) []int16 {
		pcm := make([]int16, frames*opus.FrameLen)
		for i := range frames {
			Fill(pcm[i*opus.FrameLen:][:opus.FrameLen], i, l, r)
		}
		return pcm
	}
	noisy := sound(left, right)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noisy {
		// Noise about 30 dB under the quieter tone: more than Opus adds
		// at the default bitrate.
		noisy[i] += int16(rng.IntN(321) - 160)
	}
	halfRate := sound(left, right)
	for i := range len(halfRate) / 4 {
		// Every other stereo pair: the sound played at twice its rate.
		copy(halfRate[2*i:][:2], halfRate[4*i:][:2])
	}
	halfRate = halfRate[:len(halfRate)/2]
	// garbled mixes the left tone into the right channel in the frames
	// every says, as a collapsed stereo image would.
	garbled := func(every int) []int16 {
		pcm := sound(left, right)
		for i := 0; i < frames; i += every {
			f := pcm[i*opus.FrameLen:][:opus.FrameLen]
			for k := 0; k < len(f); k += 2 {
				f[k+1] = f[k+1]/2 + f[k]/2
			}
		}
		return pcm
	}
	tests := []struct {
		name  string
		pcm   []int16
		right bool
	}{
		{"the same sound", sound(left, right), true},
		{"with coding noise", noisy, true},
		{"channels swapped", sound(right, left), false},
		{"an octave up", sound(Tone{880, -12}, Tone{1760, -18}), false},
		{"a semitone up", sound(Tone{466.16, -12}, Tone{932.33, -18}), false},
		{"at twice the rate", halfRate, false},
		{"6 dB quieter", sound(Tone{440, -18}, Tone{880, -24}), false},
		{"silence", make([]int16, frames*opus.FrameLen), false},
		{"a frame of garble in ten", garbled(10), true},
		{"a frame of garble in three", garbled(3), false},
		{"every frame garbled", garbled(1), false},
		{"less than a frame", sound(left, right)[:opus.FrameLen-2], false},
	}
	for _, tt := range tests {
		gotL, offL, errL := Compare(left, tt.pcm, 0)
		gotR, offR, errR := Compare(right, tt.pcm, 1)
		if ok := errL == nil && errR == nil; ok != tt.right {
			t.Errorf("%s: left %+v (%v), right %+v (%v); want right=%v", tt.name, gotL, errL, gotR, errR, tt.right)
		}
		t.Logf("%s: left %+v (%d frames off), right %+v (%d off); %v", tt.name, gotL, offL, gotR, offR, cmp.Or(errL, errR))
	}
}

// TestFrequency: the zero-crossing measure finds a tone's frequency well
// inside the tolerance across the range a test may use, and says 0 for
// what has no tone.
func TestFrequency(t *testing.T) {
	for _, hz := range []float64{100, 440, 880, 1000, 3000, 8000} {
		pcm := make([]int16, 10*opus.FrameLen)
		for i := range 10 {
			Fill(pcm[i*opus.FrameLen:][:opus.FrameLen], i, Tone{hz, -20}, Tone{hz * 1.5, -40})
		}
		for ch, want := range []float64{hz, hz * 1.5} {
			if got := Frequency(pcm, ch); got < want*0.999 || got > want*1.001 {
				t.Errorf("%.0f Hz tone, channel %d: measured %.2f Hz, want %.1f", hz, ch, got, want)
			}
		}
	}
	if got := Frequency(make([]int16, opus.FrameLen), 0); got != 0 {
		t.Errorf("silence measured %.1f Hz", got)
	}
	if got := Level(make([]int16, opus.FrameLen), 1); got != SilenceDBFS {
		t.Errorf("silence at %.1f dBFS", got)
	}
}
