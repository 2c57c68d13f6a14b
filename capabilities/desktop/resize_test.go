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

// resizeScreen changes the screen size through RandR as xrandr --output
// --mode would: a mode of that size on the first output, then the screen.
func resizeScreen(t *testing.T, c *xgb.Conn, w, h uint16) {
	t.Helper()
	root := xproto.Setup(c).DefaultScreen(c).Root
	res, err := randr.GetScreenResources(c, root).Reply()
	if err != nil || len(res.Outputs) == 0 || len(res.Crtcs) == 0 {
		t.Fatalf("randr screen resources: %+v, %v", res, err)
	}
	var mode randr.Mode
	for _, m := range res.Modes {
		if m.Width == w && m.Height == h {
			mode = randr.Mode(m.Id)
		}
	}
	if mode == 0 {
		name := "cua-test-mode"
		mi := randr.ModeInfo{Width: w, Height: h, DotClock: 6_000_000, Htotal: w + 80, Vtotal: h + 60,
			HsyncStart: w + 10, HsyncEnd: w + 30, VsyncStart: h + 5, VsyncEnd: h + 10, NameLen: uint16(len(name))}
		m, err := randr.CreateMode(c, root, mi, name).Reply()
		if err != nil {
			t.Fatalf("randr create mode: %v", err)
		}
		if err := randr.AddOutputModeChecked(c, res.Outputs[0], m.Mode).Check(); err != nil {
			t.Fatalf("randr add mode: %v", err)
		}
		mode = m.Mode
	}
	if int(w)*int(h) < screenArea(c) {
		// Shrinking: the CRTC must fit the screen first.
		setCrtc(t, c, res, mode)
		setSize(t, c, root, w, h)
	} else {
		setSize(t, c, root, w, h)
		setCrtc(t, c, res, mode)
	}
}

func screenArea(c *xgb.Conn) int {
	root := xproto.Setup(c).DefaultScreen(c).Root
	g, _ := xproto.GetGeometry(c, xproto.Drawable(root)).Reply()
	return int(g.Width) * int(g.Height)
}

func setCrtc(t *testing.T, c *xgb.Conn, res *randr.GetScreenResourcesReply, mode randr.Mode) {
	t.Helper()
	r, err := randr.SetCrtcConfig(c, res.Crtcs[0], res.Timestamp, res.ConfigTimestamp, 0, 0, mode,
		randr.RotationRotate0, []randr.Output{res.Outputs[0]}).Reply()
	if err != nil || r.Status != randr.SetConfigSuccess {
		t.Fatalf("randr set crtc: %+v, %v", r, err)
	}
}

func setSize(t *testing.T, c *xgb.Conn, root xproto.Window, w, h uint16) {
	t.Helper()
	if err := randr.SetScreenSizeChecked(c, root, w, h, uint32(w)/4, uint32(h)/4).Check(); err != nil {
		t.Fatalf("randr set screen size %dx%d: %v", w, h, err)
	}
}

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
		resizeScreen(t, c, uint16(size.w), uint16(size.h))
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
