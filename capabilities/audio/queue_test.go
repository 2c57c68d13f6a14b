package audio

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"
)

// pcm is n frames of s16le whose samples count up from first: frame i is
// (first+2i, first+2i+1).
func pcm(first, n int) []byte {
	b := make([]byte, 0, n*bytesPerFrame)
	for i := range n * Channels {
		b = binary.LittleEndian.AppendUint16(b, uint16(int16(first+i)))
	}
	return b
}

func TestQueue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cap     int   // frames
		blocks  []int // bytes of each block, cut from one stream
		take    int   // frames to take
		first   int16 // the first sample taken
		pos     int64 // its position
		dropped int64
	}{
		{"whole frames", 10, []int{16, 16}, 8, 0, 0, 0},
		{"blocks cut inside frames", 10, []int{3, 1, 7, 5, 16}, 8, 0, 0, 0},
		{"the oldest dropped", 10, []int{40, 20}, 10, 10, 5, 5},
		{"a block over the capacity", 10, []int{8, 60}, 10, 14, 7, 7},
		{"around the ring", 4, []int{12, 12, 12}, 4, 10, 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total := 0
			for _, n := range tc.blocks {
				total += n
			}
			stream := pcm(0, total/bytesPerFrame+1)[:total]
			q := newQueue(tc.cap)
			for _, n := range tc.blocks {
				q.write(stream[:n])
				stream = stream[n:]
				if q.frames() > tc.cap {
					t.Fatalf("%d frames held, capacity %d", q.frames(), tc.cap)
				}
			}
			if q.written != int64(total/bytesPerFrame) || q.dropped != tc.dropped {
				t.Fatalf("written %d, dropped %d; want %d, %d", q.written, q.dropped, total/bytesPerFrame, tc.dropped)
			}
			dst := make([]int16, tc.take*Channels)
			if pos := q.take(dst); pos != tc.pos {
				t.Errorf("position %d, want %d", pos, tc.pos)
			}
			for i, v := range dst {
				if v != tc.first+int16(i) {
					t.Fatalf("sample %d is %d, want %d (%v)", i, v, tc.first+int16(i), dst)
				}
			}
		})
	}
}

// FuzzQueue writes a stream in blocks of any sizes into a small queue and
// reads it back: what is held is always the newest whole frames, at most
// the capacity, each at its position.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{3, 1, 7, 5, 16, 40}, uint8(10), uint8(3))
	f.Add([]byte{255, 0, 4}, uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, sizes []byte, capFrames, takeFrames uint8) {
		if capFrames == 0 {
			return
		}
		q := newQueue(int(capFrames))
		total := 0
		for _, n := range sizes {
			total += int(n)
		}
		stream := pcm(0, total/bytesPerFrame+1)[:total]
		var written []byte
		for _, n := range sizes {
			q.write(stream[:n])
			written = append(written, stream[:n]...)
			stream = stream[n:]
			whole := int64(len(written) / bytesPerFrame)
			if q.written != whole || q.read+int64(q.frames()) != whole || q.frames() > int(capFrames) || q.dropped != q.read {
				t.Fatalf("written %d (want %d), read %d, held %d, dropped %d, capacity %d", q.written, whole, q.read, q.frames(), q.dropped, capFrames)
			}
			if take := min(int(takeFrames), q.frames()); take > 0 {
				dst := make([]int16, take*Channels)
				pos := q.take(dst)
				want := make([]int16, 0, len(dst))
				for i := range dst {
					want = append(want, int16(int(pos)*Channels+i))
				}
				if !slices.Equal(dst, want) {
					t.Fatalf("at %d: %v, want %v", pos, dst, want)
				}
				q.dropped += int64(take) // taken, not dropped: keep read == dropped + taken
			}
		}
	})
}

func TestClock(t *testing.T) {
	base := time.Unix(1000, 0)
	block := int64(480) // 10 ms
	var k clock
	// Blocks every 10 ms, each late by a jitter of 0-7 ms; the third is
	// on time.
	for i, late := range []time.Duration{3, 5, 0, 7, 2, 6} {
		end := int64(i+1) * block
		k.observe(base.Add(framesDuration(end)+late*time.Millisecond), end)
	}
	if got := k.received(0); !got.Equal(base) {
		t.Errorf("position 0 received at %v, want %v (the least delayed block)", got.Sub(base), time.Duration(0))
	}
	if got := k.received(48000); !got.Equal(base.Add(time.Second)) {
		t.Errorf("position 48000 at %v after the start, want 1s", got.Sub(base))
	}
	// After a reset (the source paused 2 s), the new arrivals count alone.
	k.reset()
	end := 7 * block
	k.observe(base.Add(framesDuration(end)+2*time.Second), end)
	if got := k.received(0); !got.Equal(base.Add(2 * time.Second)) {
		t.Errorf("after the pause, position 0 at %v, want 2s", got.Sub(base))
	}
	// The window forgets: after clockWindow late blocks, the old early
	// one no longer counts.
	for i := range clockWindow {
		end := int64(8+i) * block
		k.observe(base.Add(framesDuration(end)+2*time.Second+4*time.Millisecond), end)
	}
	if got := k.received(0); !got.Equal(base.Add(2*time.Second + 4*time.Millisecond)) {
		t.Errorf("after the window, position 0 at %v, want 2.004s", got.Sub(base))
	}
}

func TestFramesDuration(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want time.Duration
	}{
		{0, 0},
		{960, 20 * time.Millisecond},
		{48000, time.Second},
		{1, 20833 * time.Nanosecond},
		// A year of audio: no overflow.
		{48000 * 86400 * 365, 365 * 24 * time.Hour},
	} {
		if got := framesDuration(tc.n); got != tc.want {
			t.Errorf("framesDuration(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	if FrameDuration != 20*time.Millisecond || FrameLen != 1920 || bytesFor(Fragment) != 1920 || framesFor(MaxQueue) != 9600 {
		t.Errorf("frame %v of %d values, fragment %d bytes, queue %d frames", FrameDuration, FrameLen, bytesFor(Fragment), framesFor(MaxQueue))
	}
}
