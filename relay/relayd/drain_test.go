package relayd_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/relayd"
)

// goAwaysOf answers the go_aways the stand-in Space has heard.
func (sp *standInSpace) goAwaysSeen() []protocol.GoAway {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return append([]protocol.GoAway(nil), sp.goAways...)
}

// A drain through the admin socket: go_away with the reconnect delay to
// every Space; a request in flight is still proxied and answered; new
// attaches are refused 503 going_away with the delay as Retry-After; the
// node says it drains (status, metrics); a Space that leaves counts as
// left, one that stays is cut at the grace's end.
func TestDrain(t *testing.T) {
	cases := []struct {
		name      string
		leaves    bool // the stand-in Space leaves once its request is answered
		left, cut int
	}{
		{"the Space leaves", true, 1, 0},
		{"the Space stays", false, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startRelay(t, t.TempDir(), relayd.Limits{})
			alice := r.user("alice")
			ct := r.register(alice, "box")
			entered, release := make(chan struct{}), make(chan struct{})
			mux := http.NewServeMux()
			mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
				close(entered)
				<-release
				_, _ = io.WriteString(w, "answered")
			})
			sp := r.attach(ct.Token, mux)
			inFlight := make(chan int, 1)
			go func() {
				st, b, _ := r.do(http.MethodGet, "/c/box/slow", alice, nil)
				if string(b) != "answered" {
					st = -st
				}
				inFlight <- st
			}()
			select {
			case <-entered:
			case <-time.After(time.Minute):
				t.Fatal("the request never reached the Space")
			}

			grace := time.Minute
			if !tc.leaves {
				grace = 2 * time.Second
			}
			reports := make(chan relayapi.DrainReport, 1)
			go func() {
				rep, err := relayd.NewAdminClient(r.dataDir).Drain(t.Context(), relayapi.DrainRequest{RetryAfterMS: 2500, GraceMS: grace.Milliseconds()})
				if err != nil {
					t.Errorf("drain: %v", err)
				}
				reports <- rep
			}()
			eventually(t, "the go_away", func() bool { return len(sp.goAwaysSeen()) == 1 })
			if g := sp.goAwaysSeen()[0]; g.Reason != protocol.CloseGoingAway || g.RetryAfter != 2500 {
				t.Fatalf("go_away: %+v", g)
			}
			st, err := relayd.NewAdminClient(r.dataDir).Node(t.Context())
			if err != nil || !st.Draining || st.Node != "n1" || st.Sessions != 1 {
				t.Fatalf("node status while draining: %+v %v", st, err)
			}
			if m := metricsOf(t, r); !strings.Contains(m, "cua_relay_draining 1") {
				t.Fatalf("metrics while draining:\n%s", m)
			}
			// A new attach (this computer's, or any) is refused.
			_, resp, err := r.dialAttach(ct.Token)
			if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" {
				t.Fatalf("an attach while draining: %v %+v", err, resp)
			}
			code, e := attachRefusal(t, r, ct.Token)
			if code != http.StatusServiceUnavailable || e.Reason != protocol.CloseGoingAway.String() {
				t.Fatalf("attach refusal while draining: %d %+v", code, e)
			}
			// What is in flight is still proxied.
			close(release)
			if st := <-inFlight; st != http.StatusOK {
				t.Fatalf("the request in flight during the drain: %d", st)
			}
			if tc.leaves {
				sp.close()
			}
			rep := <-reports
			if rep.Sessions != 1 || rep.Left != tc.left || rep.Cut != tc.cut || !rep.Draining || rep.RetryAfterMS != 2500 {
				t.Fatalf("drain report: %+v", rep)
			}
			if !tc.leaves && sp.waitClosed() != protocol.CloseGoingAway {
				t.Fatal("the session left at the grace's end was not ended going_away")
			}
			if n := r.Server.Sessions(); n != 0 {
				t.Fatalf("%d sessions after the drain", n)
			}
		})
	}
}

// A drain's bounds are checked.
func TestDrainBounds(t *testing.T) {
	r := startRelay(t, t.TempDir(), relayd.Limits{})
	for _, req := range []relayapi.DrainRequest{{RetryAfterMS: -1}, {GraceMS: -5}, {RetryAfterMS: 2 * time.Hour.Milliseconds()}, {GraceMS: 2 * time.Hour.Milliseconds()}} {
		if _, err := relayd.NewAdminClient(r.dataDir).Drain(t.Context(), req); err == nil || !strings.Contains(err.Error(), "want 0 to") {
			t.Errorf("drain %+v: %v, want invalid_argument", req, err)
		}
	}
	if st, err := relayd.NewAdminClient(r.dataDir).Node(t.Context()); err != nil || st.Draining {
		t.Fatalf("a refused drain left the node %+v %v", st, err)
	}
}

func metricsOf(t *testing.T, r *testRelay) string {
	t.Helper()
	m, err := relayd.NewAdminClient(r.dataDir).Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return m
}
