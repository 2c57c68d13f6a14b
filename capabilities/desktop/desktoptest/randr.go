package desktoptest

import (
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/randr"
	"github.com/jezek/xgb/xproto"
)

// ResizeScreen changes the screen size through RandR as xrandr --output
// --mode would: a mode of that size on the first output, then the screen.
func ResizeScreen(t testing.TB, c *xgb.Conn, w, h uint16) {
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

func setCrtc(t testing.TB, c *xgb.Conn, res *randr.GetScreenResourcesReply, mode randr.Mode) {
	t.Helper()
	r, err := randr.SetCrtcConfig(c, res.Crtcs[0], res.Timestamp, res.ConfigTimestamp, 0, 0, mode,
		randr.RotationRotate0, []randr.Output{res.Outputs[0]}).Reply()
	if err != nil || r.Status != randr.SetConfigSuccess {
		t.Fatalf("randr set crtc: %+v, %v", r, err)
	}
}

func setSize(t testing.TB, c *xgb.Conn, root xproto.Window, w, h uint16) {
	t.Helper()
	if err := randr.SetScreenSizeChecked(c, root, w, h, uint32(w)/4, uint32(h)/4).Check(); err != nil {
		t.Fatalf("randr set screen size %dx%d: %v", w, h, err)
	}
}
