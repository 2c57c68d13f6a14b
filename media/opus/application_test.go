//go:build cgo

package opus

import (
	"math"
	"testing"
	"time"
)

// TestApplication: why the encoder is OPUS_APPLICATION_AUDIO and not
// RESTRICTED_LOWDELAY, measured. Low delay saves 4 ms of lookahead, and
// codes everything in CELT, which has no in-band FEC (FEC is SILK's
// LBRR): a packet lost is concealed, never recovered. AUDIO codes a tone
// in SILK or hybrid modes, where FEC is.
func TestApplication(t *testing.T) {
	tests := []struct {
		name      string
		app       int
		lookahead time.Duration
		celtOnly  bool
	}{
		{"AUDIO", application, 6500 * time.Microsecond, false},
		{"RESTRICTED_LOWDELAY", applicationLowDelay, 2500 * time.Microsecond, true},
	}
	pcm := make([]int16, FrameLen)
	for _, tt := range tests {
		enc, err := newEncoder(Options{}, tt.app)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		celt := 0
		const frames = 50
		for i := range frames {
			for s := range FrameSamples {
				v := int16(8000 * math.Sin(2*math.Pi*440*float64(i*FrameSamples+s)/SampleRate))
				pcm[2*s], pcm[2*s+1] = v, v/2
			}
			p, err := enc.Encode(pcm)
			if err != nil {
				t.Fatal(err)
			}
			// The TOC byte's configuration: 16-31 are CELT only
			// (RFC 6716 §3.1).
			if p.Data[0]>>3 >= 16 {
				celt++
			}
		}
		t.Logf("%s: lookahead %v, %d of %d packets CELT only", tt.name, enc.Lookahead(), celt, frames)
		if enc.Lookahead() != tt.lookahead || (celt == frames) != tt.celtOnly {
			t.Errorf("%s: lookahead %v, %d of %d packets CELT only; want %v, all CELT %v", tt.name, enc.Lookahead(), celt, frames, tt.lookahead, tt.celtOnly)
		}
	}
}
