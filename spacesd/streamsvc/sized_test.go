package streamsvc_test

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/streamsvc"
)

// checkScaledQuarters requires a keyframe of a stream scaled by num/den
// to show the test window's four colours where the window's quarters
// fall (origin: the window's top-left in the target's pixels).
func checkScaledQuarters(t *testing.T, what string, f rtctest.Frame, ox, oy, num, den int) {
	t.Helper()
	img := decodeKey(t, f)
	for _, q := range []desktoptest.Fill{desktoptest.Red, desktoptest.Green, desktoptest.Blue, desktoptest.White} {
		x, y := (ox+q.X+q.W/2)*num/den, (oy+q.Y+q.H/2)*num/den
		if got := vp8test.RGBAt(img, x, y); !desktoptest.NearRGB(got, q.RGB) {
			t.Errorf("%s: frame pixel (%d, %d) decodes to %06x, want %06x", what, x, y, got, q.RGB)
		}
	}
}

// TestSizedStream: a viewer that asks for at most 320 pixels of width
// gets frames of the screen scaled to 320x240 (the aspect kept), showing
// the test client's colours where its window is; a colour the client
// paints afterwards reaches the scaled frames through the damage of the
// capture alone (the keyframe that shows it is asked by a PLI, which
// captures nothing); and a click at frame pixels lands on the screen
// pixel whose area the frame pixel shows.
func TestSizedStream(t *testing.T) {
	e := start(t, "640x480")
	xc, win := e.showWindow(t)
	tk := e.ticket(t, api.TicketRequest{})
	r, _ := e.view(t, tk.OfferPath+"?max_width=320&max_height=400", tk.Ticket, allChannels)
	key := r.NextFrame(t, true, frameTimeout)
	if key.Width != 320 || key.Height != 240 {
		t.Fatalf("keyframe %dx%d, want 320x240", key.Width, key.Height)
	}
	checkScaledQuarters(t, "scaled keyframe", key, win.Bounds.X, win.Bounds.Y, 1, 2)

	paint := desktoptest.Fill{X: 20, Y: 120, W: 60, H: 60, RGB: 0xffff00}
	xc.Fill(paint)
	r.NextFrame(t, false, frameTimeout) // the change, scaled and coded
	eventually(t, "a keyframe that shows the painted colour", func() bool {
		if err := r.SendPLI(); err != nil {
			t.Fatal(err)
		}
		f := r.NextFrame(t, true, frameTimeout)
		x, y := (win.Bounds.X+paint.X+paint.W/2)/2, (win.Bounds.Y+paint.Y+paint.H/2)/2
		return desktoptest.NearRGB(vp8test.RGBAt(decodeKey(t, f), x, y), paint.RGB)
	})

	// Frame pixel x covers screen pixels [2x, 2x+2): a click at frame
	// point (x, y) lands on screen pixel floor(2x+1), the one whose area
	// holds the point's centre, not 2x.
	r.WaitOpen(t, api.ChannelInput, frameTimeout)
	xc.Drain()
	fx, fy := (win.Bounds.X+30)/2, (win.Bounds.Y+40)/2
	sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputButton, X: float64(fx), Y: float64(fy)})
	ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
	if wx, wy := 2*fx+1-win.Bounds.X, 2*fy+1-win.Bounds.Y; int(ev.EventX) != wx || int(ev.EventY) != wy {
		t.Fatalf("click at frame (%d, %d) of a half-size stream: window point (%d, %d), want (%d, %d)", fx, fy, ev.EventX, ev.EventY, wx, wy)
	}
}

// TestSizedWindowStreamInput: a window stream scaled by 3/4 maps a click
// at frame pixels to the window's pixel by the screenshot rule,
// floor((x+0.5) * 4/3), and its keyframe shows the window's colours.
func TestSizedWindowStreamInput(t *testing.T) {
	e := start(t, "640x480")
	xc, win := e.showWindow(t)
	path := strings.Replace(api.PathStreamWindow, "{id}", strconv.FormatUint(uint64(win.WindowID), 10), 1)
	r, _ := e.view(t, path+"?max_width=150", e.d.Token, allChannels)
	key := r.NextFrame(t, true, frameTimeout)
	if key.Width != 150 || key.Height != 150 {
		t.Fatalf("keyframe %dx%d, want 150x150", key.Width, key.Height)
	}
	checkScaledQuarters(t, "scaled window keyframe", key, 0, 0, 3, 4)
	r.WaitOpen(t, api.ChannelInput, frameTimeout)
	xc.Drain()
	for _, p := range []struct{ x, y float64 }{{10, 10}, {100.25, 37.9}, {149, 0}} {
		sendJSON(t, r, api.ChannelInput, api.ViewerInput{Type: api.InputButton, X: p.x, Y: p.y})
		ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
		wx, wy := int(math.Floor((p.x+0.5)*4/3)), int(math.Floor((p.y+0.5)*4/3))
		if int(ev.EventX) != wx || int(ev.EventY) != wy {
			t.Fatalf("click at frame (%v, %v) of a 3/4 stream: window point (%d, %d), want (%d, %d)", p.x, p.y, ev.EventX, ev.EventY, wx, wy)
		}
	}
}

// TestSizesShareOneCapture: viewers of three sizes of one screen, two of
// them alike, run one capture and two pipelines; each gets frames of its
// size; the pipeline of a size stops with its last viewer, the capture
// with the last of all.
func TestSizesShareOneCapture(t *testing.T) {
	e := start(t, "640x480")
	xc, _ := e.showWindow(t)
	full, locFull := e.view(t, api.PathStreamScreen, e.d.Token, rtctest.Options{})
	smallA, locA := e.view(t, api.PathStreamScreen+"?max_height=120", e.d.Token, rtctest.Options{})
	smallB, locB := e.view(t, api.PathStreamScreen+"?max_height=120&max_fps=10", e.d.Token, rtctest.Options{})
	for _, c := range []struct {
		r    *rtctest.Receiver
		w, h int
	}{{full, 640, 480}, {smallA, 160, 120}, {smallB, 160, 120}} {
		if f := c.r.NextFrame(t, true, frameTimeout); f.Width != c.w || f.Height != c.h {
			t.Fatalf("keyframe %dx%d, want %dx%d", f.Width, f.Height, c.w, c.h)
		}
	}
	if s, p := e.metric(t, streamsvc.MetricSources), e.metric(t, streamsvc.MetricStreams); s != 1 || p != 2 {
		t.Fatalf("three viewers of two sizes of the screen: %d captures and %d pipelines, want 1 and 2", s, p)
	}
	// One capture for both sizes: a change is captured once and reaches both.
	xc.Fill(desktoptest.Fill{X: 5, Y: 5, W: 10, H: 10, RGB: 0x336699})
	full.NextFrame(t, false, frameTimeout)
	smallA.NextFrame(t, false, frameTimeout)

	for _, loc := range []string{locA, locB} {
		if st, err := rtctest.Delete(t.Context(), e.d.URL, loc, e.d.Token); err != nil || st != http.StatusNoContent {
			t.Fatalf("DELETE %s: %d, %v", loc, st, err)
		}
	}
	eventually(t, "the small size's pipeline stopped, the capture kept", func() bool {
		return e.metric(t, streamsvc.MetricStreams) == 1 && e.metric(t, streamsvc.MetricSources) == 1
	})
	xc.Fill(desktoptest.Fill{X: 25, Y: 5, W: 10, H: 10, RGB: 0x996633})
	full.NextFrame(t, false, frameTimeout)
	if st, err := rtctest.Delete(t.Context(), e.d.URL, locFull, e.d.Token); err != nil || st != http.StatusNoContent {
		t.Fatalf("DELETE %s: %d, %v", locFull, st, err)
	}
	eventually(t, "the capture stopped with its last pipeline", func() bool {
		return e.metric(t, streamsvc.MetricStreams) == 0 && e.metric(t, streamsvc.MetricSources) == 0
	})
}

// TestSizeQueryRefused: size bounds out of range, or given twice, are
// invalid_argument, and start nothing.
func TestSizeQueryRefused(t *testing.T) {
	e := start(t, "320x240")
	for _, q := range []string{"max_width=15", "max_height=16384", "max_width=abc", "max_width=0", "max_width=100&max_width=200", "max_fps=0"} {
		r := rtctest.New(t, rtctest.Options{})
		res, err := rtctest.Post(t.Context(), e.d.URL+api.PathStreamScreen+"?"+q, e.d.Token, r.Offer)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != http.StatusBadRequest || res.Error == nil || res.Error.Kind != api.KindInvalidArgument {
			t.Errorf("?%s: %d %+v, want 400 invalid_argument", q, res.Status, res.Error)
		}
	}
	if got := e.metric(t, streamsvc.MetricStreams); got != 0 {
		t.Fatalf("%d pipelines after refused offers", got)
	}
}
