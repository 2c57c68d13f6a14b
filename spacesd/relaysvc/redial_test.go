package relaysvc_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/tlstest"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// nodes are n stand-ins as the nodes of one relay: one CA, one grant key,
// one computer token (a cluster's nodes sign with the key of their shared
// store and check the same tokens).
func nodes(t *testing.T, n int) []*standIn {
	t.Helper()
	ca := tlstest.NewCA(t)
	out := []*standIn{newStandInOf(t, ca)}
	for range n - 1 {
		s := newStandInOf(t, ca)
		s.Token = out[0].Token
		s.setKey(out[0].key)
		out = append(out, s)
	}
	return out
}

// attachTo is PUT /v1/relay with every node's URL, in order.
func attachTo(t *testing.T, d *spacesdtest.Daemon, ns []*standIn) {
	t.Helper()
	var urls []string
	for _, n := range ns {
		urls = append(urls, n.URL)
	}
	var st api.RelayStatus
	if err := d.Client.JSON(t.Context(), http.MethodPut, api.PathRelay, nil,
		api.RelayAttachRequest{URLs: urls, Token: ns[0].Token, CAPEM: ns[0].CAPEM, WaitMS: 1}, &st); err != nil {
		t.Fatal(err)
	}
}

func notHeartbeat(d time.Duration) bool { return !isHeartbeat(d) }

// A node that dies, refuses the Space (503) or sends go_away is left for
// the next URL: at once, or after the go_away's Retry-After (no backoff on
// top); the grant key pinned on the first node holds on the second.
func TestRedialMovesToTheNextNode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// leave makes node a drop the Space (rs: its session; nil when a
		// refuses from the start) and answers the wait the Space should take.
		refuse bool
		leave  func(t *testing.T, a *standIn, rs *relaySession) time.Duration
	}{
		{"died", false, func(t *testing.T, a *standIn, rs *relaySession) time.Duration {
			a.srv.CloseClientConnections()
			rs.sess.Close()
			a.setRefuse(http.StatusBadGateway) // and stays down
			return 0
		}},
		{"go_away", false, func(t *testing.T, _ *standIn, rs *relaySession) time.Duration {
			rs.send(t, protocol.GoAway{Reason: protocol.CloseGoingAway, RetryAfter: protocol.MillisOf(3 * time.Second)})
			return 3 * time.Second
		}},
		{"refused 503", true, func(*testing.T, *standIn, *relaySession) time.Duration { return 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := nodes(t, 2)
			a, b := ns[0], ns[1]
			if tc.refuse {
				a.setRefuse(http.StatusServiceUnavailable)
			}
			clock := newFakeClock()
			d := fakeDaemon(t, clock, relaysvc.Options{})
			attachTo(t, d, ns)
			var rs *relaySession
			if !tc.refuse {
				rs = a.next(t)
				clock.waitFor(t, "the heartbeat", isHeartbeat)
			}
			want := tc.leave(t, a, rs)
			if w := clock.waitFor(t, "the move", notHeartbeat); w != want {
				t.Fatalf("the Space waits %v before the next node, want %v", w, want)
			}
			clock.Advance(want)
			b.next(t)
			// The status may lag the session by a moment.
			eventually(t, "the status names node b", func() bool { return status(t, d).URL == b.URL })
		})
	}
}

// URLs are tried in turn, once each per round: the moves within a round go
// at once, the backoff waits between rounds.
func TestRedialRoundsOfURLs(t *testing.T) {
	t.Parallel()
	ns := nodes(t, 3)
	for _, n := range ns {
		n.setRefuse(http.StatusServiceUnavailable)
	}
	clock := newFakeClock()
	d := fakeDaemon(t, clock, relaysvc.Options{})
	attachTo(t, d, ns)
	counts := func() [3]int { return [3]int{ns[0].attaches(), ns[1].attaches(), ns[2].attaches()} }
	// A round: two moves at once, then the backoff, which holds the
	// attacher still: each node has had one more dial then.
	for round, backoff := range []time.Duration{jittered(500 * time.Millisecond), jittered(time.Second)} {
		for i, want := range []time.Duration{0, 0, backoff} {
			if w := clock.waitFor(t, "a wait", notHeartbeat); w != want {
				t.Fatalf("round %d, wait %d: %v, want %v", round, i, w, want)
			}
		}
		if got, want := counts(), [3]int{round + 1, round + 1, round + 1}; got != want {
			t.Fatalf("after round %d the nodes had %v dials, want %v", round, got, want)
		}
		clock.Advance(backoff)
	}
	eventually(t, "the third round's first dial", func() bool { return counts()[0] == 3 })
}

// A Space started again dials first the node of its last good session,
// which the state dir keeps.
func TestFreshStartDialsTheNodeThatWorked(t *testing.T) {
	t.Parallel()
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	a.setRefuse(http.StatusServiceUnavailable)
	dir := t.TempDir()
	d := spacesdtest.Start(t, spacesdtest.Options{Relay: relaysvc.Options{StateDir: dir}})
	attachTo(t, d, ns)
	b.next(t)
	eventually(t, "the state dir names node b", func() bool {
		raw, err := os.ReadFile(filepath.Join(dir, relaysvc.StateFile))
		var st struct {
			LastURL string `json:"last_url"`
		}
		return err == nil && json.Unmarshal(raw, &st) == nil && st.LastURL == b.URL
	})
	d.Stop()
	a.setRefuse(0)
	before := a.attaches()
	d2 := spacesdtest.Start(t, spacesdtest.Options{Relay: relaysvc.Options{StateDir: dir}})
	b.next(t)
	if n := a.attaches(); n != before {
		t.Fatalf("the restarted Space dialled node a first (%d dials, %d before)", n, before)
	}
	if st := status(t, d2); !st.Attached || st.GrantKey == "" {
		t.Fatalf("status after the restart: %+v", st)
	}
}

// After go_away the old session lingers while a relayed stream is open on
// it: a stream opened there is still served while the Space is on the
// next node; once none is open, the Space ends the old session.
func TestGoAwayLingersForStreamsInFlight(t *testing.T) {
	t.Parallel()
	ns := nodes(t, 2)
	a, b := ns[0], ns[1]
	clock := newFakeClock()
	d := fakeDaemon(t, clock, relaysvc.Options{})
	attachTo(t, d, ns)
	rs := a.next(t)
	clock.waitFor(t, "the heartbeat", isHeartbeat)
	inFlight := rs.open(t, a.grant(t, "u-alice", nil, nil))
	if code, err := get(inFlight, api.PathRelay); code != http.StatusOK {
		t.Fatalf("a relayed GET before the go_away: %d %v", code, err)
	}
	rs.send(t, protocol.GoAway{Reason: protocol.CloseGoingAway, RetryAfter: protocol.MillisOf(time.Second)})
	clock.waitFor(t, "the retry-after", func(d time.Duration) bool { return d == time.Second })
	clock.Advance(time.Second)
	b.next(t)
	// The old session still serves: the request in flight's connection,
	// and a stream the draining node opens meanwhile.
	if code, err := get(inFlight, api.PathRelay); code != http.StatusOK {
		t.Fatalf("a relayed GET on the lingering session: %d %v", code, err)
	}
	late := rs.open(t, a.grant(t, "u-alice", nil, nil))
	if code, err := get(late, api.PathRelay); code != http.StatusOK {
		t.Fatalf("a stream opened on the lingering session: %d %v", code, err)
	}
	select {
	case <-rs.ended:
		t.Fatal("the Space ended its old session with streams open on it")
	default:
	}
	inFlight.Close()
	late.Close()
	select {
	case <-rs.ended:
	case <-time.After(time.Minute):
		t.Fatal("the old session lingered on with no stream open")
	}
}
