package relaysvc

import (
	"math/rand/v2"
	"time"
)

// Clock is the attacher's time: its backoff waits and heartbeats run on
// it, so a test drives them with a fake one instead of sleeping.
type Clock interface {
	// Now is the wall clock.
	Now() time.Time
	// Monotonic is time elapsed on a clock that stands still while the
	// machine is paused (Linux's CLOCK_MONOTONIC): beside Now, it tells a
	// paused and resumed VM (see clockJumped).
	Monotonic() time.Duration
	// After fires once d has passed on the monotonic clock.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{ start time.Time }

func (realClock) Now() time.Time                         { return time.Now().Round(0) }
func (c realClock) Monotonic() time.Duration             { return time.Since(c.start) }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Backoff bounds of the redial (full jitter, DESIGN §4).
const (
	BackoffMin = 500 * time.Millisecond
	BackoffMax = 30 * time.Second
	// HealthyReset is how long a session must have lasted for the next
	// redial to start from BackoffMin again.
	HealthyReset = 30 * time.Second
	// RefusedRetry is the least wait after the relay refused the token
	// (401): a wrong or revoked token is retried slowly, never in a tight
	// loop, and the token file is read again before each try.
	RefusedRetry = 30 * time.Second
	// ClockJump is how far the wall clock may run ahead of the monotonic
	// one between two heartbeats before the attacher takes it for a
	// paused and resumed machine and redials at once.
	ClockJump = 10 * time.Second
)

// backoff is the full-jitter exponential backoff: the nth wait is drawn
// uniformly from [0, min(BackoffMax, BackoffMin·2ⁿ)).
type backoff struct {
	attempt int
	rand    func() float64
}

// ceiling is the bound of the next wait.
func (b *backoff) ceiling() time.Duration {
	d := BackoffMin
	for i := 0; i < b.attempt && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// next draws the next wait and moves to the one after.
func (b *backoff) next() time.Duration {
	c := b.ceiling()
	b.attempt++
	r := rand.Float64
	if b.rand != nil {
		r = b.rand
	}
	return time.Duration(r() * float64(c))
}

func (b *backoff) reset() { b.attempt = 0 }

// clockJumped reports whether, between two looks (wall w0, w1 and
// monotonic m0, m1), the wall clock ran ahead of the monotonic one by more
// than ClockJump (the machine was paused), or the monotonic time itself is
// far past what was waited for (a timer that fired very late).
func clockJumped(w0, w1 time.Time, m0, m1, waited time.Duration) bool {
	wall, mono := w1.Sub(w0), m1-m0
	return wall-mono > ClockJump || mono-waited > ClockJump
}
