package rtc_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
)

// stepped is a source whose picture changes when the test says so: a grey
// a step lighter each time.
type stepped struct {
	w, h   int
	change chan struct{}
	grey   byte
}

func (s *stepped) Next(ctx context.Context) (rtc.Frame, error) {
	select {
	case <-s.change:
		s.grey += 16
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return rtc.Frame{}, api.Errorf(api.KindTimeout, "no change")
		}
		return rtc.Frame{}, api.Errorf(api.KindCancelled, "closed")
	}
	pix := bytes.Repeat([]byte{s.grey, s.grey, s.grey, 0xff}, s.w*s.h)
	return rtc.Frame{Pix: pix, Stride: s.w * 4, Width: s.w, Height: s.h, Full: true}, nil
}

func (s *stepped) RequestFull() {
	select {
	case s.change <- struct{}{}:
	default:
	}
}

func (s *stepped) Close() {}

// TestFrameTimestampsFollowTheClock: a frame's RTP timestamp is the time
// it was sent, however long the screen was still before it, and the
// sender reports map it there: so a receiver can put the picture in sync
// with the sound, whose timestamps follow the time it was played. (Each
// frame's timestamp used to be the one before's plus the interval before
// that one: a change after a still spell came stamped up to a second
// early.)
func TestFrameTimestampsFollowTheClock(t *testing.T) {
	e := newEngine(t)
	src := &stepped{w: 64, h: 48, change: make(chan struct{}, 1)}
	src.change <- struct{}{} // the first frame
	r := rtctest.New(t, rtctest.Options{})
	v, answer, err := e.Join(t.Context(), rtc.Target{Key: "stepped", Open: func() (rtc.Source, error) { return src, nil }}, r.Offer, rtc.ViewerOptions{})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	defer v.Close()
	r.Accept(t, answer)
	prev := r.NextFrame(t, true, turnTimeout)
	// Still spells of different lengths, the keep-alive's (1 s) among
	// them, and the frame after each.
	const slack = 15 * time.Millisecond // the loopback's and the scheduler's
	for _, still := range []time.Duration{100 * time.Millisecond, 600 * time.Millisecond, 50 * time.Millisecond, 1300 * time.Millisecond} {
		time.Sleep(still)
		src.change <- struct{}{}
		f := r.NextFrame(t, false, turnTimeout)
		stamped := time.Duration(int32(f.Timestamp-prev.Timestamp)) * time.Second / 90000
		if d := stamped - f.Arrived.Sub(prev.Arrived); d < -slack || d > slack {
			t.Errorf("after %v still: the frames' timestamps %v apart, their arrivals %v", still, stamped, f.Arrived.Sub(prev.Arrived))
		}
		prev = f
	}
	// A sender report after the last frame (and a keep-alive) places it
	// when it came.
	deadline := time.Now().Add(turnTimeout)
	for {
		sr, ok := r.SenderReport(webrtc.RTPCodecTypeVideo)
		if ok && sr.Arrived.After(prev.Arrived.Add(1100*time.Millisecond)) {
			if d := sr.Wall(prev.Timestamp).Sub(prev.Arrived); d < -slack || d > slack {
				t.Fatalf("the sender report places the last frame %v from its arrival", d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sender report after the last frame within %v", turnTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
