package rtc

import (
	"sync"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// peerBurst is how many peer messages a viewer may send at once before
// api.MaxPeerPerSecond paces them: a pointer that starts moving shows at
// once, and a flood costs its others no more than the rate.
const peerBurst = 4

// peerMove is a viewer's pointer as OnPeer is told it.
type peerMove struct {
	x, y int
	away bool
}

// peerLimiter passes a viewer's peer messages to deliver at most
// api.MaxPeerPerSecond (a token bucket of peerBurst). A message over the
// rate is dropped, but the last one dropped is kept and delivered once
// the rate allows: the others see where the pointer stopped (or that it
// left), not where it was when the flood began.
type peerLimiter struct {
	// deliver runs under mu, so that moves arrive in the order sent.
	deliver func(peerMove)
	now     func() time.Time

	mu      sync.Mutex
	tokens  float64
	at      time.Time
	pending *peerMove
	timer   *time.Timer
	stopped bool
}

func newPeerLimiter(deliver func(peerMove), now func() time.Time) *peerLimiter {
	return &peerLimiter{deliver: deliver, now: now, tokens: peerBurst, at: now()}
}

// refill adds the tokens earned since the last call. The caller holds l.mu.
func (l *peerLimiter) refill() {
	t := l.now()
	l.tokens = min(peerBurst, l.tokens+t.Sub(l.at).Seconds()*api.MaxPeerPerSecond)
	l.at = t
}

// offer takes one message of the viewer.
func (l *peerLimiter) offer(m peerMove) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.refill()
	if l.tokens >= 1 {
		l.tokens--
		l.pending = nil // superseded
		l.deliver(m)    // under l.mu: a flush cannot overtake it
		l.mu.Unlock()
		return
	}
	l.pending = &m
	if l.timer == nil {
		wait := time.Duration((1 - l.tokens) / api.MaxPeerPerSecond * float64(time.Second))
		l.timer = time.AfterFunc(max(wait, time.Millisecond), l.flush)
	}
	l.mu.Unlock()
}

// flush delivers the pending message once a token is there.
func (l *peerLimiter) flush() {
	l.mu.Lock()
	l.timer = nil
	if l.stopped || l.pending == nil {
		l.mu.Unlock()
		return
	}
	l.refill()
	if l.tokens < 1 {
		wait := time.Duration((1 - l.tokens) / api.MaxPeerPerSecond * float64(time.Second))
		l.timer = time.AfterFunc(max(wait, time.Millisecond), l.flush)
		l.mu.Unlock()
		return
	}
	l.tokens--
	m := *l.pending
	l.pending = nil
	l.deliver(m)
	l.mu.Unlock()
}

// stop drops what is pending: the viewer has gone.
func (l *peerLimiter) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	l.pending = nil
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}
