package rtc

import (
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// startup records a viewer's way to its first frame (api.StreamStartup).
type startup struct {
	mu                                   sync.Mutex
	begun                                time.Time
	answered, ice, connected, firstFrame time.Time
	keyframe                             string
	keyTook                              time.Duration
	// captured and keyReady are its pipeline's first capture and ready
	// keyframe, kept when they came after the viewer's offer.
	captured, keyReady time.Time
}

func newStartup() *startup { return &startup{begun: time.Now()} }

// mark sets the step at, once.
func (s *startup) mark(at *time.Time) {
	s.mu.Lock()
	if at.IsZero() {
		*at = time.Now()
	}
	s.mu.Unlock()
}

// first records the viewer's first keyframe, sent at, and how it came.
func (s *startup) first(at time.Time, how string, took time.Duration, captured, keyReady time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.firstFrame.IsZero() {
		return
	}
	s.firstFrame, s.keyframe, s.keyTook = at, how, took
	if captured.After(s.begun) {
		s.captured = captured
	}
	if keyReady.After(s.begun) {
		s.keyReady = keyReady
	}
}

func (s *startup) report() api.StreamStartup {
	s.mu.Lock()
	defer s.mu.Unlock()
	since := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return float64(t.Sub(s.begun).Microseconds()) / 1000
	}
	return api.StreamStartup{AnswerMS: since(s.answered), ICEMS: since(s.ice), ConnectedMS: since(s.connected),
		FirstFrameMS: since(s.firstFrame), Keyframe: s.keyframe, KeyframeEncodeMS: float64(s.keyTook.Microseconds()) / 1000,
		CaptureMS: since(s.captured), KeyframeReadyMS: since(s.keyReady)}
}

// Startup is how the viewer's first frame came, so far.
func (v *Viewer) Startup() api.StreamStartup { return v.start.report() }
