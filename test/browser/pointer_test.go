package browser_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// TestViewerClicksLandExactly: a click at a point of the page lands on
// the screen pixel the page shows there, at two page sizes (letterboxed
// left and right at 1:1 pixels, then top and bottom at twice the device
// pixels, as a browser zoomed to 200 % has), with the right button as
// well; a wheel notch scrolls there.
func TestViewerClicksLandExactly(t *testing.T) {
	e := start(t, "800x600")
	xc, win := e.showWindow(t, 400, 300, []desktoptest.Fill{{W: 400, H: 300, RGB: 0x3050a0}})
	ep := e.link(t, api.TicketRequest{})
	p := e.b.newPage(t, 1000, 500, 1)
	p.connect(ep.ViewerURL)
	bx, by := win.Bounds.X, win.Bounds.Y
	targets := [][2]int{{bx + 1, by + 1}, {bx + 398, by + 298}, {bx + 200, by + 150}, {bx + 123, by + 77}}
	for _, size := range []struct {
		w, h int
		dpr  float64
	}{{1000, 500, 1}, {500, 900, 2}} {
		p.resize(size.w, size.h, size.dpr)
		for i, tg := range targets {
			button, detail := "left", byte(1)
			if i == len(targets)-1 {
				button, detail = "right", 3
			}
			x, y := pagePoint(size.w, size.h, 800, 600, tg[0], tg[1])
			xc.Drain()
			p.click(x, y, button, 1)
			ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
			if int(ev.RootX) != tg[0] || int(ev.RootY) != tg[1] || ev.Detail != xproto.Button(detail) {
				t.Errorf("page %dx%d at %gx: %s click at page (%.3f, %.3f) pressed button %d at (%d, %d), want button %d at (%d, %d)",
					size.w, size.h, size.dpr, button, x, y, ev.Detail, ev.RootX, ev.RootY, detail, tg[0], tg[1])
			}
		}
	}
	// A notch of a mouse wheel down is one click of X's button 5, there.
	x, y := pagePoint(500, 900, 800, 600, bx+50, by+60)
	xc.Drain()
	p.mouse("mouseMoved", x, y, "none", 0)
	p.wheel(x, y, 100)
	ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
	if ev.Detail != 5 || int(ev.RootX) != bx+50 || int(ev.RootY) != by+60 {
		t.Errorf("wheel down: button %d at (%d, %d), want 5 at (%d, %d)", ev.Detail, ev.RootX, ev.RootY, bx+50, by+60)
	}
	p.noErrors()
}

// TestViewerDoubleClickSelectsAWord: two quick clicks in the page are a
// double click in the Space: xterm selects the word under them, which
// another X client then reads from the PRIMARY selection.
func TestViewerDoubleClickSelectsAWord(t *testing.T) {
	desktoptest.Require(t, "xclip")
	e := start(t, "800x600")
	word := "select" + strings.TrimPrefix(desktoptest.RandomWord(t), "cua")
	win := e.launchXterm(t, "printf '%s\\n' "+word+"; exec sleep 600")
	ep := e.link(t, api.TicketRequest{})
	p := e.b.newPage(t, 640, 480, 1)
	p.connect(ep.ViewerURL)
	// xterm's "fixed" font is 6x13, inside a border of 2 pixels: the
	// word's fourth character.
	x, y := pagePoint(640, 480, 800, 600, win.Bounds.X+2+6*3+3, win.Bounds.Y+2+6)
	var sel string
	selected := func() bool {
		out, _ := exec.Command("xclip", "-display", e.display, "-o", "-selection", "primary").Output()
		sel = string(out)
		return sel == word
	}
	// A loaded machine may deliver the two presses further apart than
	// xterm's multi-click time (250 ms): then the double click is tried
	// again, after a wait for its selection long enough that no click of
	// one try counts with the last one's.
	const selectionWait = 5 * time.Second
	desktoptest.EventuallyWithin(t, "the double-clicked word "+word+" selected", pageTimeout, func() bool {
		p.click(x, y, "left", 2)
		for end := time.Now().Add(selectionWait); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if selected() {
				return true
			}
		}
		t.Logf("after a double click, the PRIMARY selection holds %q; trying again", sel)
		return false
	})
	p.noErrors()
}

// TestViewerWindowStream: a link to one window's stream shows the window's
// own pixels (its top-left at the frame's), and a click on the page lands
// on the window's own pixel there.
func TestViewerWindowStream(t *testing.T) {
	e := start(t, "800x600")
	xc, win := e.showWindow(t, 200, 200, quarters)
	ep := e.link(t, api.TicketRequest{WindowID: win.WindowID})
	p := e.b.newPage(t, 500, 300, 1)
	p.connect(ep.ViewerURL)
	p.waitFills("the window's colours in the video", 0, 0, quarters)
	x, y := pagePoint(500, 300, 200, 200, 30, 140)
	xc.Drain()
	p.click(x, y, "left", 1)
	ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
	if ev.EventX != 30 || ev.EventY != 140 {
		t.Errorf("click at page (%.2f, %.2f) pressed at the window's (%d, %d), want (30, 140)", x, y, ev.EventX, ev.EventY)
	}
	p.noErrors()
}
