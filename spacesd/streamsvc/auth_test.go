package streamsvc_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestTicketsRefused: an expired ticket, a ticket of another target, a
// forged one, and any ticket after the token rotates are refused; a
// ticket opens nothing but the stream routes (not even a ticket); and a
// rotation ends the streams already open.
func TestTicketsRefused(t *testing.T) {
	e := start(t, "640x480")
	_, win := e.showWindow(t)
	ctx := t.Context()
	refused := func(what, path, bearer string, status int, kind api.Kind) {
		t.Helper()
		r := rtctest.New(t, rtctest.Options{})
		res, err := rtctest.Post(ctx, e.d.URL+path, bearer, r.Offer)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != status || res.Error == nil || res.Error.Kind != kind {
			t.Errorf("%s: %d %+v, want %d %s", what, res.Status, res.Error, status, kind)
		}
	}
	screen := e.ticket(t, api.TicketRequest{})
	window := e.ticket(t, api.TicketRequest{WindowID: win.WindowID})
	short := e.ticket(t, api.TicketRequest{TTLSeconds: 1})

	refused("a window's ticket on the screen", api.PathStreamScreen, window.Ticket, http.StatusForbidden, api.KindForbidden)
	refused("the screen's ticket on a window", window.OfferPath, screen.Ticket, http.StatusForbidden, api.KindForbidden)
	other := "/v1/stream/windows/" + strconv.FormatUint(uint64(win.WindowID)+1, 10)
	refused("a window's ticket on another window", other, window.Ticket, http.StatusForbidden, api.KindForbidden)
	refused("a forged ticket", api.PathStreamScreen, screen.Ticket[:len(screen.Ticket)-3]+"AAA", http.StatusUnauthorized, api.KindUnauthenticated)
	for _, path := range []string{"/v1/capabilities", api.PathWindows} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.d.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+screen.Ticket)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a ticket: %d, want 401", path, resp.StatusCode)
		}
	}
	withTicket, err := clientWith(e.d.URL, screen.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withTicket.StreamTicket(ctx, api.TicketRequest{}); api.KindOf(err) != api.KindUnauthenticated {
		t.Errorf("a ticket minting a ticket: %v, want unauthenticated", err)
	}
	if _, err := e.d.Client.StreamTicket(ctx, api.TicketRequest{TTLSeconds: api.MaxTicketTTLSeconds + 1}); api.KindOf(err) != api.KindInvalidArgument {
		t.Errorf("a ticket over the longest TTL: %v, want invalid_argument", err)
	}

	time.Sleep(time.Until(short.ExpiresAt.Add(100 * time.Millisecond)))
	refused("an expired ticket", api.PathStreamScreen, short.Ticket, http.StatusUnauthorized, api.KindUnauthenticated)

	r, _ := e.view(t, api.PathStreamScreen, screen.Ticket, rtctest.Options{})
	r.NextFrame(t, true, frameTimeout)
	e.auth.Rotate(spacesdtest.Token())
	refused("a ticket of the old token", api.PathStreamScreen, screen.Ticket, http.StatusUnauthorized, api.KindUnauthenticated)
	refused("a window ticket of the old token", window.OfferPath, window.Ticket, http.StatusUnauthorized, api.KindUnauthenticated)
	eventually(t, "the open stream ended by the rotation", func() bool {
		s := r.PC.ConnectionState()
		return s == webrtc.PeerConnectionStateClosed || s == webrtc.PeerConnectionStateFailed || s == webrtc.PeerConnectionStateDisconnected
	})
}
