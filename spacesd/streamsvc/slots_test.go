package streamsvc_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// startWith runs a daemon with stream options so on a display of its own.
func startWith(t *testing.T, o streamsvc.Options) *env {
	t.Helper()
	vp8test.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "320x240"})
	logs := &spacesdtest.Logs{}
	o.UDPAddr = "127.0.0.1:0"
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display, Stream: o, Logger: slogTo(logs)})
	caps, err := d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ok, lim := caps.Supports(api.FeatureDesktopStream); !ok {
		t.Fatalf("desktop_stream unsupported: %s", lim)
	}
	return &env{display: display, d: d, auth: d.Auth, logs: logs}
}

// post sends offer to the screen's WHEP route with bearer and never goes
// further: no answer applied, so no ICE, as an offer posted and left.
func (e *env) post(t *testing.T, bearer, offer string) rtctest.WHEPResult {
	t.Helper()
	res, err := rtctest.Post(t.Context(), e.d.URL+api.PathStreamScreen, bearer, offer)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// One view link cannot take every stream slot. Before, 16 offers of one
// view-only ticket, none doing ICE, each got 201, and the token's holder
// got 429 until ICE gave up 30-40 s later. Now one ticket (with its
// renewals) opens at most 4 viewers, tickets together leave the last slot
// to the token, and the limits say both.
func TestTicketViewerSlots(t *testing.T) {
	// The connect timeout is out of the way: the slots are held here.
	e := startWith(t, streamsvc.Options{ConnectTimeout: time.Hour})
	caps, err := e.d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if l := caps.Limits; l.MaxStreamViewersPerTicket != api.MaxStreamViewersPerTicket || l.MaxStreamViewers != rtc.MaxViewers || l.StreamConnectTimeoutSeconds != 3600 {
		t.Fatalf("limits %+v", l)
	}
	offer := rtctest.New(t, rtctest.Options{}).Offer
	refused := func(what, bearer string) {
		t.Helper()
		res := e.post(t, bearer, offer)
		if res.Status != http.StatusTooManyRequests || res.Error == nil || res.Error.Kind != api.KindLimitExceeded || !res.Error.Retryable {
			t.Fatalf("%s: %d %+v; want 429 limit_exceeded, retryable", what, res.Status, res.Error)
		}
	}
	accepted := func(what, bearer string) rtctest.WHEPResult {
		t.Helper()
		res := e.post(t, bearer, offer)
		if res.Status != http.StatusCreated {
			t.Fatalf("%s: %d %+v; want 201", what, res.Status, res.Error)
		}
		return res
	}

	// Tickets take all slots but the token's, at most 4 each.
	var tickets []string
	var firstSession string
	for taken := 0; taken < rtc.MaxViewers-streamsvc.TokenReservedViewers; {
		tk := e.ticket(t, api.TicketRequest{ViewOnly: true}).Ticket
		tickets = append(tickets, tk)
		for range min(api.MaxStreamViewersPerTicket, rtc.MaxViewers-streamsvc.TokenReservedViewers-taken) {
			res := accepted("a ticket's offer within its share", tk)
			if firstSession == "" {
				firstSession = res.Location
			}
			taken++
		}
	}
	refused("a ticket's 5th offer", tickets[0])
	last := tickets[len(tickets)-1]
	refused("a ticket under its own share with the token's slot left", last)
	refused("a fresh ticket with the token's slot left", e.ticket(t, api.TicketRequest{}).Ticket)
	if got := e.metric(t, streamsvc.MetricViewers); got != rtc.MaxViewers-streamsvc.TokenReservedViewers {
		t.Fatalf("%d viewers, want %d", got, rtc.MaxViewers-streamsvc.TokenReservedViewers)
	}
	// The token's holder still gets a stream.
	token := accepted("the token's offer with every ticket slot taken", e.d.Token)
	refused("the token's offer with every slot taken", e.d.Token)

	// A viewer that leaves gives its slot back: the token's to the token
	// (not to a ticket), a ticket's to the tickets.
	if status, err := rtctest.Delete(t.Context(), e.d.URL, token.Location, e.d.Token); err != nil || status != http.StatusNoContent {
		t.Fatalf("DELETE of the token's session: %d, %v", status, err)
	}
	refused("a ticket's offer once the token's viewer left", last)
	if status, err := rtctest.Delete(t.Context(), e.d.URL, firstSession, tickets[0]); err != nil || status != http.StatusNoContent {
		t.Fatalf("DELETE of a ticket's session by the ticket: %d, %v", status, err)
	}
	accepted("a ticket's offer once one of its viewers left", tickets[0])
	refused("a ticket's 5th offer, again", tickets[0])
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// An offer posted and never connected gives its slot back after the
// connect timeout (api.StreamConnectTimeout, shortened here), not when
// ICE gives up 30 s and more later; a viewer that connected stays.
func TestUnconnectedViewersFreeTheirSlots(t *testing.T) {
	const timeout = 2 * time.Second
	e := startWith(t, streamsvc.Options{ConnectTimeout: timeout})
	caps, err := e.d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := caps.Limits.StreamConnectTimeoutSeconds; got != 2 {
		t.Fatalf("stream_connect_timeout_seconds %d, want 2", got)
	}
	watching, _ := e.view(t, api.PathStreamScreen, e.d.Token, rtctest.Options{})
	watching.NextFrame(t, true, frameTimeout)

	tk := e.ticket(t, api.TicketRequest{ViewOnly: true}).Ticket
	offer := rtctest.New(t, rtctest.Options{}).Offer
	var sessions []string
	for range api.MaxStreamViewersPerTicket {
		res := e.post(t, tk, offer)
		if res.Status != http.StatusCreated {
			t.Fatalf("offer: %d %+v", res.Status, res.Error)
		}
		sessions = append(sessions, res.Location)
	}
	// Within the connect timeout and a liveness margin, well before pion's
	// own ICE failure (30 s and more): the viewers left for not connecting.
	desktoptest.EventuallyWithin(t, "the unconnected viewers ended", timeout+15*time.Second, func() bool {
		return e.metric(t, streamsvc.MetricViewers) == 1
	})
	if !strings.Contains(e.logs.String(), "it never connected") {
		t.Fatalf("the daemon's log does not say the viewers never connected:\n%s", e.logs.String())
	}
	for _, loc := range sessions {
		if status, err := rtctest.Delete(t.Context(), e.d.URL, loc, e.d.Token); err != nil || status != http.StatusNotFound {
			t.Fatalf("DELETE of a timed-out session: %d, %v; want 404", status, err)
		}
	}
	if res := e.post(t, tk, offer); res.Status != http.StatusCreated {
		t.Fatalf("the ticket's offer after its viewers timed out: %d %+v; want 201", res.Status, res.Error)
	}
	// The viewer that connected before is still served: a still screen
	// sends no frames, so it asks for a keyframe.
	stillServed(t, watching)
}

// A session is ended by the ticket that opened it, or by the token.
// Before, any ticket of the same target ended it, a view-only one too,
// if it knew the session's id. Another's session is answered 404, as one
// that does not exist, and goes on.
func TestOnlyItsOpenerEndsASession(t *testing.T) {
	e := start(t, "320x240")
	full := e.ticket(t, api.TicketRequest{}).Ticket
	viewOnly := e.ticket(t, api.TicketRequest{ViewOnly: true}).Ticket
	rFull, fullLoc := e.view(t, api.PathStreamScreen, full, rtctest.Options{})
	_, viewLoc := e.view(t, api.PathStreamScreen, viewOnly, rtctest.Options{})
	_, tokenLoc := e.view(t, api.PathStreamScreen, e.d.Token, rtctest.Options{})
	rFull.NextFrame(t, true, frameTimeout)

	del := func(what, loc, bearer string, want int) {
		t.Helper()
		status, err := rtctest.Delete(t.Context(), e.d.URL, loc, bearer)
		if err != nil || status != want {
			t.Fatalf("%s: %d, %v; want %d", what, status, err, want)
		}
	}
	del("a view-only ticket's DELETE of a full ticket's session", fullLoc, viewOnly, http.StatusNotFound)
	del("a ticket's DELETE of the token's session", tokenLoc, viewOnly, http.StatusNotFound)
	del("a full ticket's DELETE of a view-only ticket's session", viewLoc, full, http.StatusNotFound)
	if got := e.metric(t, streamsvc.MetricViewers); got != 3 {
		t.Fatalf("%d viewers after refused DELETEs, want 3", got)
	}
	stillServed(t, rFull)

	del("the opener's DELETE", fullLoc, full, http.StatusNoContent)
	del("the token's DELETE of a ticket's session", viewLoc, e.d.Token, http.StatusNoContent)
	del("the token's DELETE of its own session", tokenLoc, e.d.Token, http.StatusNoContent)
	eventually(t, "no viewer left", func() bool { return e.metric(t, streamsvc.MetricViewers) == 0 })
}

// stillServed checks that r still gets frames of a still screen: a PLI
// brings a keyframe, one that arrived after it (the keyframes of other
// viewers' joins may wait in r's frames).
func stillServed(t *testing.T, r *rtctest.Receiver) {
	t.Helper()
	asked := time.Now()
	if err := r.SendPLI(); err != nil {
		t.Fatal(err)
	}
	for range 16 {
		if f := r.NextFrame(t, true, frameTimeout); f.Arrived.After(asked) {
			return
		}
	}
	t.Fatal("no keyframe arrived after the PLI, only older ones")
}
