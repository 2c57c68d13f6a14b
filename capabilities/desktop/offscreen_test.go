package desktop_test

import (
	"context"
	"image/color"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// TestPartlyOffScreenWindow follows the coordinate rule for a window that
// hangs over the top-left corner of the screen (negative coordinates),
// with and without Composite: the window screenshot's pixel (x, y) is the
// window's point (x, y), and a click given in it with the window id lands
// there.
func TestPartlyOffScreenWindow(t *testing.T) {
	for _, noComposite := range []bool{false, true} {
		name := "composite"
		if noComposite {
			name = "no composite"
		}
		t.Run(name, func(t *testing.T) {
			display := desktoptest.Start(t, desktoptest.Options{Size: "640x480", NoComposite: noComposite})
			d := desktop.New(desktop.Options{Display: display})
			t.Cleanup(d.Close)
			ctx := context.Background()
			if _, err := d.Windows(ctx, ""); err != nil { // connect before the test client (see desktopDaemon)
				t.Fatal(err)
			}
			title := desktoptest.RandomWord(t)
			xc := desktoptest.NewXClient(t, display, title, 200, 200, []desktoptest.Fill{desktoptest.Red, desktoptest.Green, desktoptest.Blue, desktoptest.White})
			var win api.Window
			desktoptest.Eventually(t, "window "+title+" listed", func() bool {
				ws, err := d.Windows(ctx, title)
				if err != nil || len(ws) != 1 || !ws[0].OnScreen {
					return false
				}
				win = ws[0]
				return true
			})
			x, y := -150, -120
			if win, err := d.SetWindowGeometry(ctx, win.WindowID, api.GeometryRequest{X: &x, Y: &y}); err != nil || win.Bounds.X != x || win.Bounds.Y != y {
				t.Fatalf("move the window to (%d, %d): %+v, %v", x, y, win, err)
			}
			// The visible corner is the white quarter: window (150..199, 120..199).
			var info api.ScreenshotInfo
			desktoptest.Eventually(t, "the window's visible corner captured", func() bool {
				img, bounds, err := d.Capture(ctx, win.WindowID)
				if err != nil {
					t.Fatalf("capture: %v", err)
				}
				info.Bounds = bounds
				px, py := 175-(bounds.X-x), 160-(bounds.Y-y)
				return img.At(px, py) == color.RGBA{0xff, 0xff, 0xff, 0xff}
			})
			xc.Drain()
			// Window point (175, 160) in the screenshot's pixels.
			px, py := float64(175-(info.Bounds.X-x)), float64(160-(info.Bounds.Y-y))
			res, err := d.Click(ctx, api.ClickRequest{X: px, Y: py, Pointer: api.Pointer{WindowID: win.WindowID}})
			if err != nil {
				t.Fatalf("click at screenshot pixel (%v, %v) of a window with bounds %+v: %v", px, py, info.Bounds, err)
			}
			ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
			if ev.EventX != 175 || ev.EventY != 160 || res.X != 25 || res.Y != 40 {
				t.Fatalf("click at window point (175, 160): the window got (%d, %d), answer %+v", ev.EventX, ev.EventY, res)
			}
		})
	}
}
