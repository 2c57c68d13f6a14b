package relaysvc_test

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock a test moves by hand. Every After reports the
// duration asked for on waits, so a test sees what the attacher waits for.
type fakeClock struct {
	mu     sync.Mutex
	wall   time.Time
	mono   time.Duration
	timers []fakeTimer
	waits  chan time.Duration
}

type fakeTimer struct {
	at time.Duration
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{wall: time.Now(), waits: make(chan time.Duration, 1024)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *fakeClock) Monotonic() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.wall
	} else {
		c.timers = append(c.timers, fakeTimer{c.mono + d, ch})
	}
	c.waits <- d
	return ch
}

// Advance moves both clocks by d and fires the timers due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mono += d
	c.wall = c.wall.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at <= c.mono {
			t.ch <- c.wall
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

// Jump moves the wall clock alone: a machine paused and resumed.
func (c *fakeClock) Jump(d time.Duration) {
	c.mu.Lock()
	c.wall = c.wall.Add(d)
	c.mu.Unlock()
}

// waitFor takes the attacher's waits until one satisfies ok and answers it.
func (c *fakeClock) waitFor(t *testing.T, what string, ok func(time.Duration) bool) time.Duration {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case d := <-c.waits:
			if ok(d) {
				return d
			}
		case <-timeout:
			t.Fatalf("the attacher never waited for %s", what)
		}
	}
}
