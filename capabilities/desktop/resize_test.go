package desktop_test

import (
	"context"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/randr"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// TestScreenResize changes the resolution under a connected Desktop, as
// xrandr does: screenshots and clicks must follow the new size rather than
// the one the display had when the daemon connected.
func TestScreenResize(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480", NoWindowManager: true})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := context.Background()
	if _, info, err := d.Screenshot(ctx, api.ScreenshotRequest{}); err != nil || info.Width != 640 {
		t.Fatalf("first screenshot: %+v, %v", info, err)
	}
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := randr.Init(c); err != nil {
		t.Fatalf("RandR: %v", err)
	}
	root := xproto.Setup(c).DefaultScreen(c).Root

	for _, size := range []struct{ w, h int }{{320, 240}, {640, 480}} {
		desktoptest.ResizeScreen(t, c, uint16(size.w), uint16(size.h))
		for _, format := range []string{api.FormatPNG, api.FormatJPEG} {
			_, info, err := d.Screenshot(ctx, api.ScreenshotRequest{Format: format})
			if err != nil {
				t.Fatalf("screenshot (%s) after the resize to %dx%d: %v", format, size.w, size.h, err)
			}
			if info.Width != size.w || info.Height != size.h || info.Bounds.Width != size.w {
				t.Fatalf("screenshot after the resize to %dx%d answered %+v", size.w, size.h, info)
			}
		}
		// The bottom-right pixel of the new screen is clickable; one beyond is not.
		px, py := float64(size.w-1), float64(size.h-1)
		if _, err := d.MoveMouse(ctx, api.MouseMoveRequest{X: px, Y: py}); err != nil {
			t.Fatalf("move to (%v, %v) on %dx%d: %v", px, py, size.w, size.h, err)
		}
		q, err := xproto.QueryPointer(c, root).Reply()
		if err != nil || int(q.RootX) != size.w-1 || int(q.RootY) != size.h-1 {
			t.Fatalf("pointer at %+v, %v; want (%d, %d)", q, err, size.w-1, size.h-1)
		}
		_, err = d.MoveMouse(ctx, api.MouseMoveRequest{X: float64(size.w), Y: 0})
		if e := api.AsError(err); e == nil || e.Kind != api.KindInvalidArgument {
			t.Fatalf("move beyond the %dx%d screen: %v; want invalid_argument", size.w, size.h, err)
		}
	}
}
