package relaysvc_test

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

const nearlyOne = 0.999

// jittered is the wait a backoff of ceiling c draws with nearlyOne.
func jittered(c time.Duration) time.Duration { return time.Duration(nearlyOne * float64(c)) }

// Full jitter: each wait is in [0, min(30 s, 0.5 s·2ⁿ)).
func TestBackoffIsFullJitterWithinBounds(t *testing.T) {
	t.Parallel()
	ceilings := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, d := range relaysvc.Backoffs(func() float64 { return 0 }, len(ceilings)) {
		if d != 0 {
			t.Fatalf("wait %d with jitter 0: %v", i, d)
		}
	}
	for i, d := range relaysvc.Backoffs(func() float64 { return nearlyOne }, len(ceilings)) {
		if d != jittered(ceilings[i]) {
			t.Fatalf("wait %d with jitter %.3f: %v, want %v", i, nearlyOne, d, jittered(ceilings[i]))
		}
	}
	for range 100 {
		for i, d := range relaysvc.Backoffs(rand.Float64, len(ceilings)) {
			if d < 0 || d >= ceilings[i] {
				t.Fatalf("wait %d: %v outside [0, %v)", i, d, ceilings[i])
			}
		}
	}
}

func TestClockJumped(t *testing.T) {
	t.Parallel()
	w0 := time.Now()
	cases := []struct {
		name           string
		wall, mono, hb time.Duration
		want           bool
	}{
		{"steady", 15 * time.Second, 15 * time.Second, 15 * time.Second, false},
		{"paused VM", time.Hour, 15 * time.Second, 15 * time.Second, true},
		{"timer very late", 2 * time.Minute, 2 * time.Minute, 15 * time.Second, true},
		{"wall set back", -time.Hour, 15 * time.Second, 15 * time.Second, false},
	}
	for _, tc := range cases {
		if got := relaysvc.ClockJumped(w0, w0.Add(tc.wall), 0, tc.mono, tc.hb); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// fakeDaemon is a daemon whose attacher runs on clock, jitter nearlyOne.
func fakeDaemon(t *testing.T, clock *fakeClock, o relaysvc.Options) *spacesdtest.Daemon {
	o.Clock, o.Rand = clock, func() float64 { return nearlyOne }
	if os.Getenv("RELAY_DEBUG") != "" {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return spacesdtest.Start(t, spacesdtest.Options{Relay: o})
}

func attachNoWait(t *testing.T, d *spacesdtest.Daemon, relay *standIn) {
	t.Helper()
	var st api.RelayStatus
	if err := d.Client.JSON(t.Context(), http.MethodPut, api.PathRelay, nil,
		api.RelayAttachRequest{URLs: []string{relay.URL}, Token: relay.Token, CAPEM: relay.CAPEM, WaitMS: 1}, &st); err != nil {
		t.Fatal(err)
	}
}

func isHeartbeat(d time.Duration) bool { return d == time.Minute } // the stand-in's heartbeat

// The redial follows the backoff (fake clock): 0.5 s doubling to 30 s,
// jittered; reset only after 30 s healthy, not after less.
func TestBackoffScheduleAndReset(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	relay.setRefuse(http.StatusServiceUnavailable)
	clock := newFakeClock()
	d := fakeDaemon(t, clock, relaysvc.Options{})
	attachNoWait(t, d, relay)
	for i, c := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		w := clock.waitFor(t, "a backoff", func(d time.Duration) bool { return !isHeartbeat(d) })
		if w != jittered(c) {
			t.Fatalf("wait %d: %v, want %v", i, w, jittered(c))
		}
		if i == 7 {
			break
		}
		n := relay.attaches()
		clock.Advance(w)
		eventually(t, "a redial after the wait", func() bool { return relay.attaches() > n })
	}
	// Let it attach; a session of 10 s does not reset the backoff.
	relay.setRefuse(0)
	clock.Advance(30 * time.Second)
	rs := relay.next(t)
	clock.waitFor(t, "the heartbeat", isHeartbeat)
	clock.Advance(10 * time.Second)
	rs.sess.Close()
	if w := clock.waitFor(t, "a backoff", func(d time.Duration) bool { return !isHeartbeat(d) }); w != jittered(30*time.Second) {
		t.Fatalf("after 10 s healthy the wait is %v, want the backoff's %v", w, jittered(30*time.Second))
	}
	// A session of 30 s resets it.
	clock.Advance(30 * time.Second)
	rs = relay.next(t)
	clock.waitFor(t, "the heartbeat", isHeartbeat)
	clock.Advance(31 * time.Second)
	rs.sess.Close()
	if w := clock.waitFor(t, "a backoff", func(d time.Duration) bool { return !isHeartbeat(d) }); w != jittered(500*time.Millisecond) {
		t.Fatalf("after 31 s healthy the wait is %v, want %v", w, jittered(500*time.Millisecond))
	}
}

// A go-away is obeyed: no redial before its Retry-After.
func TestGoAwayObeyed(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	clock := newFakeClock()
	d := fakeDaemon(t, clock, relaysvc.Options{})
	attachNoWait(t, d, relay)
	rs := relay.next(t)
	if err := rs.w.WriteMessage(protocol.GoAway{Reason: protocol.CloseGoingAway, RetryAfter: protocol.MillisOf(20 * time.Second)}); err != nil {
		t.Fatalf("send go_away: %v (the Space's status: %+v)", err, status(t, d))
	}
	if w := clock.waitFor(t, "the retry-after", func(d time.Duration) bool { return !isHeartbeat(d) }); w != 20*time.Second {
		t.Fatalf("after a go-away of 20 s the Space waits %v", w)
	}
	n := relay.attaches()
	clock.Advance(19 * time.Second)
	time.Sleep(100 * time.Millisecond)
	if relay.attaches() != n {
		t.Fatal("redialled before the go-away's Retry-After")
	}
	clock.Advance(time.Second)
	relay.next(t)
}

// A refused token (401) is retried slowly (30 s), and the token file is
// read again before the next dial.
func TestRefusedTokenRetriedSlowlyWithTheFileReread(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	clock := newFakeClock()
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tok")
	bad, _ := protocol.NewToken(protocol.TokenComputer)
	if err := os.WriteFile(tokFile, []byte(bad+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, []byte(relay.CAPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	d := fakeDaemon(t, clock, relaysvc.Options{URLs: []string{relay.URL}, TokenFile: tokFile, CAFile: caFile})
	if w := clock.waitFor(t, "a retry", func(time.Duration) bool { return true }); w != relaysvc.RefusedRetry {
		t.Fatalf("after a 401 the Space waits %v, want %v", w, relaysvc.RefusedRetry)
	}
	if relay.attaches() != 1 || relay.lastBearer() != bad {
		t.Fatalf("%d attaches", relay.attaches())
	}
	if st := status(t, d); st.Connected || st.LastError == "" {
		t.Fatalf("status after a 401: %+v", st)
	}
	if err := os.WriteFile(tokFile, []byte(relay.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock.Advance(29 * time.Second)
	time.Sleep(100 * time.Millisecond)
	if relay.attaches() != 1 {
		t.Fatal("retried a refused token before 30 s")
	}
	clock.Advance(time.Second)
	relay.next(t)
	if relay.lastBearer() != relay.Token {
		t.Fatal("the token file was not read again before the redial")
	}
}

// A clock jump (a paused and resumed VM) makes the Space redial at once.
func TestClockJumpRedialsAtOnce(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	clock := newFakeClock()
	d := fakeDaemon(t, clock, relaysvc.Options{})
	attachNoWait(t, d, relay)
	relay.next(t)
	clock.waitFor(t, "the heartbeat", isHeartbeat)
	clock.Jump(time.Hour)
	clock.Advance(time.Minute)
	relay.next(t) // no Advance: at once
}

// A relay that stops answering is left after protocol.MissedHeartbeats
// silent heartbeats, with heartbeat_timeout.
func TestHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	relay := newStandIn(t)
	clock := newFakeClock()
	d := fakeDaemon(t, clock, relaysvc.Options{})
	attachNoWait(t, d, relay)
	rs := relay.next(t)
	relay.mu.Lock()
	relay.mute = true
	relay.mu.Unlock()
	for range protocol.MissedHeartbeats + 1 {
		clock.waitFor(t, "a heartbeat", isHeartbeat)
		clock.Advance(time.Minute)
	}
	select {
	case m := <-rs.frames:
		if c, ok := m.(protocol.Close); !ok || c.Code != protocol.CloseHeartbeatTimeout {
			t.Fatalf("the Space sent %#v", m)
		}
	case <-time.After(time.Minute):
		t.Fatal("the Space stayed on a silent relay")
	}
}
