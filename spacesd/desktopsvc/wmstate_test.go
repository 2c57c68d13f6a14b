package desktopsvc_test

import (
	"context"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// listed answers the window as GET /v1/windows lists it, or false when it
// is not listed.
func listed(t *testing.T, c *client.Client, id uint32) (api.Window, bool) {
	t.Helper()
	ws, err := c.Windows(t.Context(), "")
	if err != nil {
		t.Fatalf("windows: %v", err)
	}
	for _, w := range ws {
		if w.WindowID == id {
			return w, true
		}
	}
	return api.Window{}, false
}

// An xterm under openbox is moved, resized, minimized, maximized, restored
// and closed through the daemon, and the list shows each step.
func TestWindowStates(t *testing.T) {
	_, c := desktopDaemon(t)
	ctx := t.Context()
	win := launchXterm(t, c, "exec sleep 600")
	if win.State != api.WindowNormal {
		t.Fatalf("a new xterm is listed as %q, want normal", win.State)
	}

	x, y, w, h := 120, 90, 500, 300
	moved, err := c.SetWindowGeometry(ctx, win.WindowID, api.GeometryRequest{X: &x, Y: &y, Width: &w, Height: &h})
	if err != nil {
		t.Fatalf("geometry: %v", err)
	}
	// xterm resizes in whole character cells (the size may be rounded
	// down), and its own 1-pixel border sits around the content.
	b := moved.Bounds
	if b.X < x || b.X > x+2 || b.Y < y || b.Y > y+2 || b.Width > w || b.Width < w-20 || b.Height > h || b.Height < h-30 {
		t.Fatalf("moved to %+v, asked %dx%d+%d+%d", b, w, h, x, y)
	}
	if l, ok := listed(t, c, win.WindowID); !ok || l.Bounds != b {
		t.Fatalf("listed as %+v (%v) after the move to %+v", l.Bounds, ok, b)
	}

	steps := []struct {
		state   api.WindowState
		visible bool
	}{
		{api.WindowMinimized, false},
		{api.WindowNormal, true}, // out of minimized
		{api.WindowMaximized, true},
		{api.WindowNormal, true}, // out of maximized
		{api.WindowMinimized, false},
		{api.WindowMaximized, true}, // straight from minimized
		{api.WindowNormal, true},
	}
	for i, s := range steps {
		got, err := c.SetWindowState(ctx, win.WindowID, s.state)
		if err != nil {
			t.Fatalf("step %d: state %s: %v", i, s.state, err)
		}
		l, ok := listed(t, c, win.WindowID)
		if got.State != s.state || !ok || l.State != s.state || l.OnScreen != s.visible {
			t.Fatalf("step %d: asked %s; answered %q, listed %+v (%v)", i, s.state, got.State, l, ok)
		}
		switch s.state {
		case api.WindowMaximized:
			if l.Bounds.Width <= b.Width || l.Bounds.Height <= b.Height {
				t.Fatalf("step %d: maximized to %+v, no larger than %+v", i, l.Bounds, b)
			}
		case api.WindowNormal:
			// Where it goes back to is the window manager's choice
			// (openbox puts a restored window a title bar lower); its
			// size is the one it had.
			if l.Bounds.Width != b.Width || l.Bounds.Height != b.Height {
				t.Fatalf("step %d: restored to %+v, was %+v", i, l.Bounds, b)
			}
		}
	}

	// Asking for the state it is in answers at once, changing nothing.
	before, _ := listed(t, c, win.WindowID)
	if got, err := c.SetWindowState(ctx, win.WindowID, api.WindowNormal); err != nil || got.Bounds != before.Bounds {
		t.Fatalf("normal again: %+v, %v", got, err)
	}

	if err := c.CloseWindow(ctx, win.WindowID); err != nil {
		t.Fatalf("close: %v", err)
	}
	desktoptest.Eventually(t, "the closed xterm to leave the list", func() bool {
		_, ok := listed(t, c, win.WindowID)
		return !ok
	})
}

// A window that made itself fullscreen is listed so, and "normal" takes it
// out of fullscreen too.
func TestWindowLeavesFullscreen(t *testing.T) {
	display, c := desktopDaemon(t)
	ctx := t.Context()
	title := desktoptest.RandomWord(t)
	xc := desktoptest.NewXClient(t, display, title, 300, 200, nil)
	win := waitWindow(t, c, title)

	// The client asks for fullscreen itself, as a video player does.
	netWMState, full := internAtom(t, xc.C, "_NET_WM_STATE"), internAtom(t, xc.C, "_NET_WM_STATE_FULLSCREEN")
	ev := xproto.ClientMessageEvent{Format: 32, Window: xc.Win, Type: netWMState,
		Data: xproto.ClientMessageDataUnionData32New([]uint32{1, uint32(full), 0, 1, 0})}
	root := xproto.Setup(xc.C).DefaultScreen(xc.C).Root
	if err := xproto.SendEventChecked(xc.C, false, root,
		xproto.EventMaskSubstructureRedirect|xproto.EventMaskSubstructureNotify, string(ev.Bytes())).Check(); err != nil {
		t.Fatalf("send fullscreen request: %v", err)
	}
	// Openbox sets the state before it resizes: wait for both, so that the
	// restore starts from a settled fullscreen window (as an agent meets it).
	desktoptest.Eventually(t, "the window listed as fullscreen, at the screen's size", func() bool {
		l, ok := listed(t, c, win.WindowID)
		return ok && l.State == api.WindowFullscreen && l.Bounds != win.Bounds
	})
	got, err := c.SetWindowState(ctx, win.WindowID, api.WindowNormal)
	if err != nil || got.State != api.WindowNormal || got.Bounds.Width != win.Bounds.Width || got.Bounds.Height != win.Bounds.Height {
		t.Fatalf("normal from fullscreen: %+v, %v; was %+v", got, err, win.Bounds)
	}
}

func TestWindowStateRefusals(t *testing.T) {
	_, c := desktopDaemon(t)
	ctx := context.Background()
	win := launchXterm(t, c, "exec sleep 600")
	for _, tc := range []struct {
		id    uint32
		state api.WindowState
		want  api.Kind
	}{
		{win.WindowID, api.WindowFullscreen, api.KindInvalidArgument}, // reported, not asked for
		{win.WindowID, "iconic", api.KindInvalidArgument},
		{win.WindowID, "", api.KindInvalidArgument},
		{0x7ffffff0, api.WindowMinimized, api.KindNotFound},
	} {
		_, err := c.SetWindowState(ctx, tc.id, tc.state)
		if k := api.KindOf(err); k != tc.want {
			t.Errorf("window %d state %q: %v (kind %s), want %s", tc.id, tc.state, err, k, tc.want)
		}
	}
	if l, ok := listed(t, c, win.WindowID); !ok || l.State != api.WindowNormal {
		t.Fatalf("after the refusals the xterm is %+v (%v)", l, ok)
	}
}

func internAtom(t *testing.T, c *xgb.Conn, name string) xproto.Atom {
	t.Helper()
	r, err := xproto.InternAtom(c, false, uint16(len(name)), name).Reply()
	if err != nil {
		t.Fatalf("intern %s: %v", name, err)
	}
	return r.Atom
}
