package streamsvc_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/randr"
	"github.com/jezek/xgb/xproto"
	"github.com/pion/webrtc/v4"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/rtc"
	"github.com/trycua/cua-spacesd/media/rtc/rtctest"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
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
	checkScaledQuarters(t, what, f, ox, oy, 1, 1)
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

// TestWindowStreamCovered: a window's stream shows its own content while
// another window covers it (Composite), in the window's own coordinates.
func TestWindowStreamCovered(t *testing.T) {
	e := start(t, "640x480")
	_, win := e.showWindow(t)
	cover := desktoptest.NewXClient(t, e.display, desktoptest.RandomWord(t), 300, 300, []desktoptest.Fill{{X: 0, Y: 0, W: 300, H: 300, RGB: 0x7f007f}})
	x, y := win.Bounds.X, win.Bounds.Y
	eventually(t, "the covering window shown over the first", func() bool {
		if _, err := e.d.Client.SetWindowGeometry(t.Context(), uint32(cover.Win), api.GeometryRequest{X: &x, Y: &y}); err != nil {
			return false
		}
		ws, err := e.d.Client.Windows(t.Context(), "")
		if err != nil {
			return false
		}
		for _, w := range ws {
			if w.WindowID == uint32(cover.Win) && w.OnScreen {
				return w.Bounds.X <= win.Bounds.X+150 && w.Bounds.Y <= win.Bounds.Y+150 &&
					w.Bounds.X+w.Bounds.Width >= win.Bounds.X+150 && w.Bounds.Y+w.Bounds.Height >= win.Bounds.Y+150
			}
		}
		return false
	})
	tk := e.ticket(t, api.TicketRequest{WindowID: win.WindowID})
	if tk.FrameSize != (api.Size{Width: 200, Height: 200}) {
		t.Fatalf("window ticket frame size %+v", tk.FrameSize)
	}
	r, _ := e.view(t, tk.OfferPath, tk.Ticket, rtctest.Options{})
	key := r.NextFrame(t, true, frameTimeout)
	if key.Width != 200 || key.Height != 200 {
		t.Fatalf("window keyframe %dx%d", key.Width, key.Height)
	}
	checkQuarters(t, "covered window's keyframe", key, 0, 0)

	// A window resized keeps its stream, at its new size.
	width, height := 160, 120
	if _, err := e.d.Client.SetWindowGeometry(t.Context(), win.WindowID, api.GeometryRequest{Width: &width, Height: &height}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a keyframe of the resized window", func() bool {
		f := r.NextFrame(t, true, frameTimeout)
		return f.Width == width && f.Height == height
	})
}

// TestPLIBringsKeyframe: a PLI is answered with a keyframe promptly. The
// bound here is a liveness bound for a loaded CI machine; the time it
// takes is measured by make bench (BenchmarkStream*: pli_to_key_ms).
func TestPLIBringsKeyframe(t *testing.T) {
	e := start(t, "640x480")
	r, _ := e.view(t, api.PathStreamScreen, e.d.Token, rtctest.Options{})
	r.NextFrame(t, true, frameTimeout)
	for range 3 {
		// An idle screen sends only keep-alives: nothing but the PLI can
		// bring a keyframe here.
		time.Sleep(2 * rtc.MinKeyframeInterval) // outside the rate limit: the PLI alone decides
		if err := r.SendPLI(); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		f := r.NextFrame(t, true, frameTimeout)
		t.Logf("PLI to keyframe: %v", f.Arrived.Sub(sent))
	}
}

// TestTwoViewersResizeAndStop: two viewers share one stream; a screen
// resized with RandR keeps frames coming to both, at the new size; once
// both left, the stream stops and nothing more is captured however much
// the screen changes.
func TestTwoViewersResizeAndStop(t *testing.T) {
	e := start(t, "800x600") // Xvfb's screen cannot grow past its start size
	xc, _ := e.showWindow(t)
	a, locA := e.view(t, api.PathStreamScreen, e.d.Token, rtctest.Options{Channels: []string{api.ChannelControl}})
	b, _ := e.view(t, api.PathStreamScreen, e.d.Token, rtctest.Options{NoCandidates: true})
	for _, r := range []*rtctest.Receiver{a, b} {
		if f := r.NextFrame(t, true, frameTimeout); f.Width != 800 {
			t.Fatalf("keyframe %dx%d", f.Width, f.Height)
		}
	}
	if got := e.metric(t, streamsvc.MetricStreams); got != 1 {
		t.Fatalf("two viewers of the screen run %d pipelines, want 1", got)
	}
	c, err := xgb.NewConnDisplay(e.display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := randr.Init(c); err != nil {
		t.Fatal(err)
	}
	desktoptest.ResizeScreen(t, c, 640, 480)
	for _, r := range []*rtctest.Receiver{a, b} {
		deadline := time.Now().Add(frameTimeout)
		for {
			f := r.NextFrame(t, true, frameTimeout)
			if f.Width == 640 && f.Height == 480 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no 640x480 keyframe after the resize (last %dx%d)", f.Width, f.Height)
			}
		}
	}
	// The control channel said so too.
	for {
		m := nextMessage(t, a, api.ChannelControl)
		if m.Type == api.ControlSize && m.Width == 640 && m.Height == 480 {
			break
		}
	}
	xc.Fill(desktoptest.Fill{X: 1, Y: 1, W: 9, H: 9, RGB: 0x445566})
	a.NextFrame(t, false, frameTimeout)
	b.NextFrame(t, false, frameTimeout)

	if st, err := rtctest.Delete(t.Context(), e.d.URL, locA, e.d.Token); err != nil || st != http.StatusNoContent {
		t.Fatalf("DELETE: %d, %v", st, err)
	}
	if err := b.PC.Close(); err != nil { // the other leaves by closing its connection
		t.Fatal(err)
	}
	eventually(t, "the stream stopped", func() bool {
		return e.metric(t, streamsvc.MetricStreams) == 0 && e.metric(t, streamsvc.MetricViewers) == 0
	})
	before := e.metric(t, streamsvc.MetricCaptures)
	for i := range 10 {
		xc.Fill(desktoptest.Fill{X: 10 * i, Y: 50, W: 8, H: 8, RGB: uint32(0x101010 * (i + 1))})
	}
	// One round trip to the daemon after the fills: a capture of them
	// would have been counted by the time the metric is read... twice.
	if _, err := e.d.Client.Windows(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	// A capture loop still running would wake for those fills at once, and
	// within KeepAliveInterval in any case.
	time.Sleep(rtc.KeepAliveInterval + rtc.KeepAliveInterval/2)
	if after := e.metric(t, streamsvc.MetricCaptures); after != before {
		t.Fatalf("%d captures after the last viewer left", after-before)
	}
}

// TestWindowStreamOfAMinimizedWindow: a viewer may join the stream of a
// minimized window, which waits for it (past the run of failed captures
// that ends a stream) and shows it once restored; a window that goes
// ends its stream.
func TestWindowStreamOfAMinimizedWindow(t *testing.T) {
	e := start(t, "640x480")
	xc, win := e.showWindow(t)
	shown := func(want bool) func() bool {
		return func() bool {
			w, err := e.d.Client.Windows(t.Context(), "")
			if err != nil {
				return false
			}
			for _, x := range w {
				if x.WindowID == win.WindowID {
					return x.OnScreen == want
				}
			}
			return false
		}
	}
	iconify(t, xc)
	eventually(t, "the window minimized", shown(false))
	r, _ := e.view(t, strings.Replace(api.PathStreamWindow, "{id}", strconv.FormatUint(uint64(win.WindowID), 10), 1), e.d.Token, rtctest.Options{})
	// Longer than the run of failed captures that ends a stream (25 x
	// 200 ms): a minimized window is waited for, not an error.
	time.Sleep(6 * time.Second)
	if _, err := e.d.Client.ActivateWindow(t.Context(), win.WindowID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the window restored", shown(true))
	f := r.NextFrame(t, true, frameTimeout)
	checkQuarters(t, "the restored window's keyframe", f, 0, 0)
	if s := r.PC.ConnectionState(); s != webrtc.PeerConnectionStateConnected {
		t.Fatalf("the stream of a restored window: connection %s", s)
	}
	xc.C.Close() // the window goes with its client
	eventually(t, "the stream of a window that went ended", func() bool {
		return e.metric(t, streamsvc.MetricStreams) == 0
	})
}

// iconify asks the window manager to minimize a window (ICCCM
// WM_CHANGE_STATE to IconicState), as a minimize button does.
func iconify(t *testing.T, xc *desktoptest.XClient) {
	t.Helper()
	a, err := xproto.InternAtom(xc.C, false, uint16(len("WM_CHANGE_STATE")), "WM_CHANGE_STATE").Reply()
	if err != nil {
		t.Fatal(err)
	}
	const iconicState = 3
	root := xproto.Setup(xc.C).DefaultScreen(xc.C).Root
	ev := xproto.ClientMessageEvent{Format: 32, Window: xc.Win, Type: a.Atom,
		Data: xproto.ClientMessageDataUnionData32New([]uint32{iconicState, 0, 0, 0, 0})}
	mask := uint32(xproto.EventMaskSubstructureRedirect | xproto.EventMaskSubstructureNotify)
	if err := xproto.SendEventChecked(xc.C, false, root, mask, string(ev.Bytes())).Check(); err != nil {
		t.Fatal(err)
	}
}

// TestMediaOptions: behind a 1:1 NAT the answer announces the public
// address instead of the host's (and a viewer connects to it), and
// ICE-TCP adds passive TCP candidates.
func TestMediaOptions(t *testing.T) {
	vp8test.Require(t)
	display := desktoptest.Start(t, desktoptest.Options{Size: "320x240", NoWindowManager: true})
	// 127.0.0.2 stands for the public address: it is on loopback too, so
	// a viewer here still reaches it.
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display,
		Stream: streamsvc.Options{NAT1To1IPs: []string{"127.0.0.2"}, ICETCPAddr: "127.0.0.1:0"}})
	r := rtctest.New(t, rtctest.Options{})
	res, err := rtctest.Post(t.Context(), d.URL+api.PathStreamScreen, d.Token, r.Offer)
	if err != nil || res.Status != http.StatusCreated {
		t.Fatalf("offer: %+v, %v", res, err)
	}
	var udp, tcp int
	for _, line := range strings.Split(res.Answer, "\n") {
		if !strings.HasPrefix(line, "a=candidate:") {
			continue
		}
		if !strings.Contains(line, " 127.0.0.2 ") {
			t.Errorf("a candidate not at the NAT's address: %s", line)
		}
		switch {
		case strings.Contains(strings.ToLower(line), " udp "):
			udp++
		case strings.Contains(strings.ToLower(line), " tcp ") && strings.Contains(line, "tcptype passive"):
			tcp++
		}
	}
	if udp == 0 || tcp == 0 {
		t.Fatalf("answer has %d UDP and %d passive TCP candidates:\n%s", udp, tcp, res.Answer)
	}
	r.Accept(t, res.Answer)
	r.NextFrame(t, true, frameTimeout)
}
