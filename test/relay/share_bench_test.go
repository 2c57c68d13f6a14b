package relay_test

import (
	"context"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/relay/relayapi"
)

// unshareTarget is the bound on the time from an unshare to the
// end of the person's live sessions.
const unshareTarget = 500 * time.Millisecond

// BenchmarkUnshareEnds: the time from an unshare (the relay's DELETE,
// sent by the owner) to the end of bob's live session through the relay:
// a PTY of his as an editor (cat, its WebSocket ends), and a WHEP viewer
// of his (the control channel closes). Each round shares again, opens
// the session, sees it live, unshares and waits; the median is reported
// beside the target.
func BenchmarkUnshareEnds(b *testing.B) {
	desktoptest.Require(b)
	display := desktoptest.Start(b, desktoptest.Options{Size: "640x480"})
	w := newWorld(b)
	ctx := context.Background()
	aliceToken, bobToken := w.user("alice"), w.user("bob")
	alice, bob := newBridge(b, w, aliceToken), newBridge(b, w, bobToken)
	if _, err := w.relay.Store.CreateTeam(ctx, "crew"); err != nil {
		b.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, err := w.relay.Store.AddTeamMember(ctx, "crew", u); err != nil {
			b.Fatal(err)
		}
	}
	s := startSpace(b, display)
	alice.addSpace(b, "box", s)
	var shared sharesResult
	share := func(role string) {
		alice.call(b, "share_space", map[string]any{"space": "box", "who": "bob", "role": role}, &shared)
	}
	share("viewer")
	s.waitConnected(b, 0)
	invitee := shared.InviteeSpace
	web := w.viewerClient(b, nil)
	unshare := func() time.Time {
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, w.relayURL()+"/v1/computers/box/shares?"+relayapi.QueryWho+"=bob", nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		start := time.Now()
		resp, err := web.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("unshare: %d", resp.StatusCode)
		}
		return start
	}
	report := func(b *testing.B, ds []time.Duration) {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		b.ReportMetric(ms(ds[len(ds)/2]), "median-ms")
		b.ReportMetric(ms(ds[len(ds)-1]), "max-ms")
		b.ReportMetric(ms(unshareTarget), "target-ms")
		b.ReportMetric(0, "ns/op")
	}

	b.Run("editor-pty", func(b *testing.B) {
		var ds []time.Duration
		for range b.N {
			share("editor")
			c, _, err := bob.reg.Client(invitee)
			if err != nil {
				b.Fatal(err)
			}
			e := startPTYEcho(b, c)
			e.roundTrip(b)
			start := unshare()
			for {
				if _, err := e.st.Next(); err != nil {
					break
				}
				if time.Since(start) > 10*time.Second {
					b.Fatal("bob's PTY still live 10 s after the unshare")
				}
			}
			ds = append(ds, time.Since(start))
		}
		report(b, ds)
	})

	b.Run("viewer-stream", func(b *testing.B) {
		var ds []time.Duration
		for range b.N {
			share("viewer")
			r := rtctest.New(b, rtctest.Options{Channels: []string{api.ChannelControl}})
			res, err := rtctest.PostVia(ctx, web, w.relayURL()+"/c/box/v1/stream/screen", bobToken, r.Offer)
			if err != nil || res.Status != http.StatusCreated {
				b.Fatalf("bob's offer through the relay: %+v, %v", res, err)
			}
			r.Accept(b, res.Answer)
			r.NextFrame(b, true, frameTimeout)
			r.WaitOpen(b, api.ChannelControl, frameTimeout)
			start := unshare()
			select {
			case <-r.Closed[api.ChannelControl]:
			case <-time.After(10 * time.Second):
				b.Fatal("bob's stream still live 10 s after the unshare")
			}
			ds = append(ds, time.Since(start))
			_ = r.PC.Close()
		}
		report(b, ds)
	})
}
