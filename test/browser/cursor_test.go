package browser_test

import (
	"fmt"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xfixes"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// cursorImage reads the display's cursor as XFixes has it: size and hot
// spot (what the page must draw, learnt here apart from the daemon).
func cursorImage(t *testing.T, display string) *xfixes.GetCursorImageReply {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := xfixes.Init(c); err != nil {
		t.Fatal(err)
	}
	if _, err := xfixes.QueryVersion(c, 5, 0).Reply(); err != nil {
		t.Fatal(err)
	}
	r, err := xfixes.GetCursorImage(c).Reply()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestViewerDrawsTheSpacesCursor: the page draws the Space's cursor, in
// its shape (a window's hand, from XFixes) with its hot spot on the
// pointer's pixel, where the Space's pointer is when something else moves
// it; over the picture the local pointer is hidden, the drawn cursor
// follows the local mouse at once, and the Space's pointer follows it to
// the matching pixel; over the letterbox the local pointer shows again.
func TestViewerDrawsTheSpacesCursor(t *testing.T) {
	e := start(t, "800x600")
	xc, win := e.showWindow(t, 200, 200, quarters)
	xc.SetGlyphCursor(t, desktoptest.CursorHand2)
	ep := e.link(t, api.TicketRequest{})
	p := e.b.newPage(t, 1000, 600, 1) // 100 pixels of letterbox left and right, 1:1
	p.connect(ep.ViewerURL)

	px, py := win.Bounds.X+30, win.Bounds.Y+40
	if _, err := e.d.Client.MoveMouse(t.Context(), api.MouseMoveRequest{X: float64(px), Y: float64(py)}); err != nil {
		t.Fatal(err)
	}
	var img *xfixes.GetCursorImageReply
	desktoptest.Eventually(t, "the hand over the window", func() bool {
		img = cursorImage(t, e.display)
		return img.X == int16(px) && img.Y == int16(py) && img.Width > 8
	})
	type drawn struct {
		Hidden        bool
		Width, Height int
		X, Y, Scale   float64
		Opaque        int
	}
	read := func() drawn {
		return value[drawn](p, `(() => {
			const c = document.getElementById('cursor');
			const m = new DOMMatrixReadOnly(getComputedStyle(c).transform);
			const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let opaque = 0;
			for (let i = 3; i < d.length; i += 4) if (d[i] > 0) opaque++;
			return { Hidden: c.hidden, Width: c.width, Height: c.height, X: m.e, Y: m.f, Scale: m.a, Opaque: opaque };
		})()`)
	}
	want := drawn{Width: int(img.Width), Height: int(img.Height), X: float64(100 + px - int(img.Xhot)), Y: float64(py - int(img.Yhot)), Scale: 1}
	var got drawn
	desktoptest.EventuallyWithin(t, "the page drawing the hand where the Space's pointer is", pageTimeout, func() bool {
		got = read()
		return !got.Hidden && got.Width == want.Width && got.Height == want.Height && got.X == want.X && got.Y == want.Y && got.Scale == 1 && got.Opaque > 0
	})

	// The local mouse over the picture: no local pointer, and the cursor
	// at the mouse (its hot spot on the mouse's point, or on the corner
	// of the pixel there once the Space's own position comes back).
	stageCursor := `getComputedStyle(document.getElementById('stage')).cursor`
	mx, my := float64(100+win.Bounds.X+100)+0.5, float64(win.Bounds.Y+100)+0.5
	p.mouse("mouseMoved", mx, my, "none", 0)
	if c := value[string](p, stageCursor); c != "none" {
		t.Errorf("local pointer over the picture: cursor %q, want none", c)
	}
	p.waitFor("the cursor at the local mouse", fmt.Sprintf(`(() => {
		const m = new DOMMatrixReadOnly(getComputedStyle(document.getElementById('cursor')).transform);
		const x = m.e + %d, y = m.f + %d;
		return x >= %g && x <= %g && y >= %g && y <= %g;
	})()`, img.Xhot, img.Yhot, mx-0.5, mx, my-0.5, my))
	// The move went to the Space too: its pointer is on the pixel under
	// the local mouse (read from the X server, apart from the daemon).
	tx, ty := int16(win.Bounds.X+100), int16(win.Bounds.Y+100)
	desktoptest.EventuallyWithin(t, "the Space's pointer moved where the page's mouse went", pageTimeout, func() bool {
		at := cursorImage(t, e.display)
		return at.X == tx && at.Y == ty
	})
	p.mouse("mouseMoved", 50, 300, "none", 0)
	if c := value[string](p, stageCursor); c == "none" {
		t.Error("local pointer over the letterbox is hidden")
	}
	p.noErrors()
}
