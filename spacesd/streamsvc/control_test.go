package streamsvc_test

import (
	"bytes"
	"image/png"
	"net/http"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
)

// controlUntil reads the control channel until a message satisfies ok.
func controlUntil(t *testing.T, r *rtctest.Receiver, what string, ok func(api.ViewerControl) bool) api.ViewerControl {
	t.Helper()
	deadline := time.Now().Add(frameTimeout)
	for time.Now().Before(deadline) {
		if m := nextMessage(t, r, api.ChannelControl); ok(m) {
			return m
		}
	}
	t.Fatalf("no %s on the control channel within %s", what, frameTimeout)
	return api.ViewerControl{}
}

// TestCursorAndTicketRenewal: a viewer's control channel carries the
// pointer (position in the stream's pixels, its shape once as a PNG) and,
// for a viewer that came with a ticket, a renewal of the same target and
// mode that outlives the ticket and opens the stream after it expired. A
// window stream's pointer is in the window's own pixels.
func TestCursorAndTicketRenewal(t *testing.T) {
	e := start(t, "640x480")
	_, win := e.showWindow(t)
	ctx := t.Context()
	if _, err := e.d.Client.MoveMouse(ctx, api.MouseMoveRequest{X: 600, Y: 400}); err != nil {
		t.Fatal(err)
	}
	tk := e.ticket(t, api.TicketRequest{ViewOnly: true, TTLSeconds: 2})
	r, _ := e.view(t, tk.OfferPath, tk.Ticket, rtctest.Options{Channels: []string{api.ChannelControl}})

	// The renewal and the pointer come at once, in either order.
	var renewal, m api.ViewerControl
	controlUntil(t, r, "the first cursor and a ticket renewal", func(got api.ViewerControl) bool {
		switch {
		case got.Type == api.ControlTicket && renewal.Type == "":
			renewal = got
		case got.Type == api.ControlCursor && m.Type == "":
			m = got
		}
		return renewal.Type != "" && m.Type != ""
	})
	c := m.Cursor
	if c == nil || c.X != 600 || c.Y != 400 || c.Shape == nil {
		t.Fatalf("first cursor %+v, want the pointer at (600, 400) with its shape", c)
	}
	img, err := png.Decode(bytes.NewReader(c.Shape.PNG))
	if err != nil {
		t.Fatalf("cursor shape's PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != c.Shape.Width || b.Dy() != c.Shape.Height || c.Shape.HotX >= b.Dx() || c.Shape.HotY >= b.Dy() {
		t.Fatalf("cursor image %v, shape %+v", b, *c.Shape)
	}
	if _, err := e.d.Client.MoveMouse(ctx, api.MouseMoveRequest{X: 10, Y: 20}); err != nil {
		t.Fatal(err)
	}
	moved := controlUntil(t, r, "the moved cursor", func(m api.ViewerControl) bool {
		return m.Type == api.ControlCursor && m.Cursor.X == 10 && m.Cursor.Y == 20
	})
	if moved.Cursor.Serial == c.Serial && moved.Cursor.Shape != nil {
		t.Errorf("the shape of serial %d was sent twice", c.Serial)
	}

	m = renewal
	if m.ExpiresAt == nil || m.ExpiresAt.Before(time.Now().Add(api.TicketRenewalTTL-time.Minute)) {
		t.Fatalf("renewal expires at %v, want about %s from now", m.ExpiresAt, api.TicketRenewalTTL)
	}
	renewed, err := e.auth.VerifyTicket(m.Ticket, time.Now())
	if err != nil || renewed.Target != "screen" || !renewed.ViewOnly {
		t.Fatalf("renewal %+v, %v: want a view-only ticket of the screen", renewed, err)
	}
	// The renewal is the same grant: its viewers count as the ticket's.
	if orig, err := e.auth.VerifyTicket(tk.Ticket, time.Now()); err != nil || renewed.ID != orig.ID {
		t.Fatalf("renewal's ID %q, the ticket's %q (%v): want the same", renewed.ID, orig.ID, err)
	}
	// Wait out the ticket the viewer came with.
	time.Sleep(time.Until(tk.ExpiresAt.Add(time.Second)))
	again := rtctest.New(t, rtctest.Options{})
	if res, err := rtctest.Post(ctx, e.d.URL+tk.OfferPath, tk.Ticket, again.Offer); err != nil || res.Status != http.StatusUnauthorized {
		t.Fatalf("offer with the expired ticket: %+v, %v; want 401", res, err)
	}
	res, err := rtctest.Post(ctx, e.d.URL+tk.OfferPath, m.Ticket, again.Offer)
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("offer with the renewal after the ticket expired: %+v, %v; want 201", res, err)
	}

	wt := e.ticket(t, api.TicketRequest{WindowID: win.WindowID})
	w, _ := e.view(t, wt.OfferPath, wt.Ticket, rtctest.Options{Channels: []string{api.ChannelControl}})
	controlUntil(t, w, "the pointer in the window's pixels", func(m api.ViewerControl) bool {
		return m.Type == api.ControlCursor && m.Cursor.X == 10-win.Bounds.X && m.Cursor.Y == 20-win.Bounds.Y
	})
}
