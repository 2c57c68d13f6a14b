package streamsvc_test

import (
	"image"
	"strconv"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// place moves a window to (x, y) and answers where it landed.
func (e *env) place(t *testing.T, id uint32, x, y int) api.Window {
	t.Helper()
	w, err := e.d.Client.SetWindowGeometry(t.Context(), id, api.GeometryRequest{X: &x, Y: &y})
	if err != nil {
		t.Fatalf("move window %d: %v", id, err)
	}
	return *w
}

func rectOf(w api.Window) image.Rectangle {
	b := w.Bounds
	return image.Rect(b.X, b.Y, b.X+b.Width, b.Y+b.Height)
}

// inputOf keeps the presses among a test client's events.
func inputOf(evs []xgb.Event) (buttons []xproto.ButtonPressEvent, keys []xproto.KeyPressEvent) {
	for _, ev := range evs {
		switch e := ev.(type) {
		case xproto.ButtonPressEvent:
			buttons = append(buttons, e)
		case xproto.KeyPressEvent:
			keys = append(keys, e)
		}
	}
	return buttons, keys
}

// TestWindowStreamInputConfined: the input of a window's stream reaches
// that window only, for a ticket's viewer and the token's alike. With a
// second window overlapping it, a click outside the window (on the other
// one), a click inside its bounds where the other window covers it, and
// keys and text while the other window has the focus all reach nothing,
// each is answered forbidden and counted; a click, keys and text of the
// window itself still arrive.
func TestWindowStreamInputConfined(t *testing.T) {
	for _, tc := range []struct {
		name      string
		useTicket bool
	}{{"ticket", true}, {"token", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, "640x480")
			mine, win := e.showWindow(t)
			other, owin := e.showWindow(t)
			win = e.place(t, win.WindowID, 100, 100)
			owin = e.place(t, owin.WindowID, 200, 150)
			overlap := rectOf(win).Intersect(rectOf(owin))
			if overlap.Dx() < 20 || overlap.Dy() < 20 {
				t.Fatalf("windows at %v and %v hardly overlap", win.Bounds, owin.Bounds)
			}
			offer, bearer := "/v1/stream/windows/"+strconv.FormatUint(uint64(win.WindowID), 10), e.d.Token
			if tc.useTicket {
				tk := e.ticket(t, api.TicketRequest{WindowID: win.WindowID})
				offer, bearer = tk.OfferPath, tk.Ticket
			}
			r, _ := e.view(t, offer, bearer, allChannels)
			r.WaitOpen(t, api.ChannelInput, frameTimeout)
			mine.Drain()
			other.Drain()

			// In the window's own pixels: a point of its uncovered part,
			// one of the overlap, one of the other window outside it.
			own := func(x, y int) (float64, float64) { return float64(x - win.Bounds.X), float64(y - win.Bounds.Y) }
			freeX, freeY := own(win.Bounds.X+10, win.Bounds.Y+10)
			coverX, coverY := own(overlap.Min.X+overlap.Dx()/2, overlap.Min.Y+overlap.Dy()/2)
			outX, outY := own(owin.Bounds.X+owin.Bounds.Width-10, owin.Bounds.Y+owin.Bounds.Height-10)
			if image.Pt(int(outX), int(outY)).In(image.Rect(0, 0, win.Bounds.Width, win.Bounds.Height)) {
				t.Fatalf("the outside point (%v, %v) is inside the window", outX, outY)
			}
			forbidden := func(what string) {
				t.Helper()
				if m := nextMessage(t, r, api.ChannelInput); m.Type != api.ControlError || m.Error == nil || m.Error.Kind != api.KindForbidden {
					t.Fatalf("answer to %s: %+v, want a forbidden error", what, m)
				}
			}
			click := func(x, y float64) {
				sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputButton, X: x, Y: y})
			}

			// The first click activates the window (it comes on top), and lands.
			click(freeX, freeY)
			if ev := desktoptest.Next[xproto.ButtonPressEvent](t, mine, desktoptest.EventTimeout); int(ev.EventX) != int(freeX) || int(ev.EventY) != int(freeY) {
				t.Fatalf("click in the window: at (%d, %d), want (%v, %v)", ev.EventX, ev.EventY, freeX, freeY)
			}
			// A button held in the window and let go outside is released
			// all the same (X gives the release to the window that took
			// the press): nothing stays down.
			sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputButton, X: freeX, Y: freeY, Action: api.ActionDown})
			desktoptest.Next[xproto.ButtonPressEvent](t, mine, desktoptest.EventTimeout)
			sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputButton, X: outX, Y: outY, Action: api.ActionUp})
			root := xproto.Setup(mine.C).DefaultScreen(mine.C).Root
			eventually(t, "the button let go outside the window released", func() bool {
				q, err := xproto.QueryPointer(mine.C, root).Reply()
				return err == nil && q.Mask&xproto.ButtonMask1 == 0
			})
			click(outX, outY)
			forbidden("a click outside the window")
			sendJSON(t, r, api.ChannelPointer, api.ViewerInput{Type: api.InputMove, X: outX, Y: outY})

			// The other window on top, with the focus.
			if _, err := e.d.Client.ActivateWindow(t.Context(), owin.WindowID); err != nil {
				t.Fatal(err)
			}
			click(coverX, coverY)
			forbidden("a click where another window covers the window")
			sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputText, Text: "id\n"})
			forbidden("text while another window has the focus")
			sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputKey, Key: "Return"})
			forbidden("a key while another window has the focus")
			sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputKey, Key: "x", Action: api.ActionDown})
			forbidden("a key held down while another window has the focus")
			sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputKey, Key: "x", Action: api.ActionUp})

			// The window's own input still arrives: a click where it shows,
			// and keys once it has the focus again.
			click(freeX, freeY)
			if ev := desktoptest.Next[xproto.ButtonPressEvent](t, mine, desktoptest.EventTimeout); int(ev.EventX) != int(freeX) || int(ev.EventY) != int(freeY) {
				t.Fatalf("click in the window after the refusals: at (%d, %d), want (%v, %v)", ev.EventX, ev.EventY, freeX, freeY)
			}
			if _, err := e.d.Client.ActivateWindow(t.Context(), win.WindowID); err != nil {
				t.Fatal(err)
			}
			sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputText, Text: "ok"})
			for range 2 {
				desktoptest.Next[xproto.KeyPressEvent](t, mine, desktoptest.EventTimeout)
			}

			// Everything the other window got meanwhile: the input went
			// out in order, and the window's own arrived after the rest.
			if buttons, keys := inputOf(other.Collect(t)); len(buttons) > 0 || len(keys) > 0 {
				t.Fatalf("the other window received %d presses and %d keys of the window's stream: %+v %+v", len(buttons), len(keys), buttons, keys)
			}
			// (The move went on the pointer channel, which is not ordered
			// with the input channel: it may not be counted yet.)
			if n := e.metric(t, streamsvc.MetricPointerDropped); n < 2 {
				t.Errorf("%s = %d, want at least 2 (two clicks)", streamsvc.MetricPointerDropped, n)
			}
			if n := e.metric(t, streamsvc.MetricKeysDropped); n < 3 {
				t.Errorf("%s = %d, want at least 3 (text, a key, a key held)", streamsvc.MetricKeysDropped, n)
			}
		})
	}
}
