package streamsvc_test

import (
	"net/http"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// showWindow opens a test X client's 200x200 window of four colours at
// (x, y) and waits until the daemon lists it on screen.
func (e *env) showWindow(t *testing.T) (*desktoptest.XClient, api.Window) {
	t.Helper()
	title := desktoptest.RandomWord(t)
	xc := desktoptest.NewXClient(t, e.display, title, 200, 200,
		[]desktoptest.Fill{desktoptest.Red, desktoptest.Green, desktoptest.Blue, desktoptest.White})
	var win api.Window
	eventually(t, "window "+title+" shown", func() bool {
		ws, err := e.d.Client.Windows(t.Context(), title)
		if err != nil || len(ws) != 1 || !ws[0].OnScreen {
			return false
		}
		win = ws[0]
		return true
	})
	return xc, win
}

// checkQuarters requires the decoded image to show the test window's four
// colours where the window is (origin: its top-left in the image).
func checkQuarters(t *testing.T, what string, f rtctest.Frame, ox, oy int) {
	t.Helper()
	img := decodeKey(t, f)
	for _, q := range []desktoptest.Fill{desktoptest.Red, desktoptest.Green, desktoptest.Blue, desktoptest.White} {
		x, y := ox+q.X+q.W/2, oy+q.Y+q.H/2
		if got := rgbAt(img, x, y); !near(got, q.RGB) {
			t.Errorf("%s: pixel (%d, %d) decodes to %06x, want %06x", what, x, y, got, q.RGB)
		}
	}
}

// TestScreenStream: a viewer with a ticket, whose offer carries no
// candidate at all (as Chromium's on loopback), gets a keyframe of the
// screen's size that shows the test client's colours where its window
// is, with the zero playout delay on the packets; frames keep coming as
// the client paints; DELETE of the Location ends the session, and with
// its last viewer the stream.
func TestScreenStream(t *testing.T) {
	e := start(t, "640x480")
	xc, win := e.showWindow(t)
	tk := e.ticket(t, api.TicketRequest{})
	if tk.OfferPath != api.PathStreamScreen || tk.Codec != "vp8" || tk.FrameSize != (api.Size{Width: 640, Height: 480}) {
		t.Fatalf("ticket answer %+v", tk)
	}
	r, loc := e.view(t, tk.OfferPath, tk.Ticket, rtctest.Options{NoCandidates: true})
	key := r.NextFrame(t, true, frameTimeout)
	if key.Width != 640 || key.Height != 480 || !key.PlayoutDelay {
		t.Fatalf("keyframe %dx%d, playout delay %v", key.Width, key.Height, key.PlayoutDelay)
	}
	checkQuarters(t, "screen keyframe", key, win.Bounds.X, win.Bounds.Y)

	for i := range 3 {
		xc.Fill(desktoptest.Fill{X: 10 * i, Y: 10, W: 5, H: 5, RGB: 0x102030})
		r.NextFrame(t, false, frameTimeout)
	}
	if got := e.metric(t, streamsvc.MetricStreams); got != 1 {
		t.Fatalf("%d streams running with one viewer", got)
	}
	if st, err := rtctest.Delete(t.Context(), e.d.URL, loc, tk.Ticket); err != nil || st != http.StatusNoContent {
		t.Fatalf("DELETE %s: %d, %v", loc, st, err)
	}
	eventually(t, "the stream stopped", func() bool { return e.metric(t, streamsvc.MetricStreams) == 0 })
	if st, _ := rtctest.Delete(t.Context(), e.d.URL, loc, tk.Ticket); st != http.StatusNotFound {
		t.Fatalf("second DELETE: %d, want 404", st)
	}
}
