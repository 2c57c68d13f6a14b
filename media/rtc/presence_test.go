package rtc

import (
	"sync"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
)

// The limiter passes a burst, then api.MaxPeerPerSecond, and the last
// move of a flood arrives after it (where the pointer stopped), in order.
func TestPeerLimiter(t *testing.T) {
	var mu sync.Mutex
	clock := time.Unix(1000, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	var got []peerMove
	l := newPeerLimiter(func(m peerMove) { got = append(got, m) }, now)
	defer l.stop()

	// One simulated second of a flood, 1000 moves a second.
	for i := range 1000 {
		l.offer(peerMove{x: i})
		advance(time.Millisecond)
	}
	l.mu.Lock()
	n := len(got)
	l.mu.Unlock()
	if most := peerBurst + api.MaxPeerPerSecond + 1; n > most || n < api.MaxPeerPerSecond/2 {
		t.Fatalf("a flood of 1000 moves in a second passed %d: want at most %d, and some", n, most)
	}
	advance(time.Second)
	l.flush() // as its timer would, once the rate allows
	l.mu.Lock()
	defer l.mu.Unlock()
	if last := got[len(got)-1]; last.x != 999 {
		t.Fatalf("the flood's last move delivered is %+v, want x 999 (where the pointer stopped)", last)
	}
	for i := 1; i < len(got); i++ {
		if got[i].x <= got[i-1].x {
			t.Fatalf("moves out of order: %+v", got)
		}
	}
}

// A stopped limiter delivers nothing, pending or new.
func TestPeerLimiterStop(t *testing.T) {
	delivered := 0
	l := newPeerLimiter(func(peerMove) { delivered++ }, time.Now)
	for range peerBurst + 3 {
		l.offer(peerMove{away: true})
	}
	l.stop()
	l.flush()
	l.offer(peerMove{})
	if delivered != peerBurst {
		t.Fatalf("delivered %d, want the burst (%d) and nothing after stop", delivered, peerBurst)
	}
}
