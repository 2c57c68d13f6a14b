package relaysvc

import (
	"context"
	"time"
)

// After a go_away the old session lingers: the relay keeps proxying what
// is in flight on it for its grace period (a draining node), and the Space
// keeps serving it, answering the relay's pings and kicks, while it dials
// the next node. It ends once no relayed stream is open on it (the relay
// closes its idle ones as it drains), when the relay ends it, or at
// MaxLinger.
const (
	// MaxLinger bounds a session after its go_away (the relay's own
	// grace ends it sooner).
	MaxLinger = 5 * time.Minute
	// lingerPoll is how often a lingering session counts its streams.
	lingerPoll = 100 * time.Millisecond
)

// linger waits until the session carries nothing but its control stream,
// the session ends (errc: its reader or acceptor stopped), ctx ends (a
// detach), or MaxLinger. Real time, not the attacher's clock: it is a
// bound, and the redial's waits are what tests drive.
func (s *session) linger(ctx context.Context, errc <-chan error) {
	bound := time.NewTimer(MaxLinger)
	defer bound.Stop()
	tick := time.NewTicker(lingerPoll)
	defer tick.Stop()
	for s.sess.NumStreams() > 1 {
		select {
		case <-ctx.Done():
			return
		case <-errc:
			return
		case <-bound.C:
			s.a.log.Info("relay: a session past its go_away still carries streams; closing it", "url", s.url, "streams", s.sess.NumStreams()-1)
			return
		case <-tick.C:
		}
	}
}
