package desktop_test

import (
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// xclient is a small X program of the test: a window painted in known
// colours that records the pointer and key events it receives.
type xclient struct {
	c      *xgb.Conn
	win    xproto.Window
	w, h   int
	fills  []fill
	gc     xproto.Gcontext
	events chan xgb.Event
}

// fill is one coloured rectangle of the window (window coordinates).
type fill struct {
	x, y, w, h int
	rgb        uint32
}

// newXClient opens a managed window with the given title and content.
func newXClient(t testing.TB, display, title string, w, h int, fills []fill) *xclient {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("test client: connect %s: %v", display, err)
	}
	t.Cleanup(c.Close)
	screen := xproto.Setup(c).DefaultScreen(c)
	id, _ := c.NewId()
	win := xproto.Window(id)
	mask := uint32(xproto.EventMaskExposure | xproto.EventMaskButtonPress | xproto.EventMaskKeyPress | xproto.EventMaskStructureNotify)
	if err := xproto.CreateWindowChecked(c, screen.RootDepth, win, screen.Root, 0, 0, uint16(w), uint16(h), 0,
		xproto.WindowClassInputOutput, screen.RootVisual, xproto.CwBackPixel|xproto.CwEventMask,
		[]uint32{0x808080, mask}).Check(); err != nil {
		t.Fatalf("test client: create window: %v", err)
	}
	setProp := func(name, typ string, format byte, data []byte) {
		a, _ := xproto.InternAtom(c, false, uint16(len(name)), name).Reply()
		ty, _ := xproto.InternAtom(c, false, uint16(len(typ)), typ).Reply()
		xproto.ChangeProperty(c, xproto.PropModeReplace, win, a.Atom, ty.Atom, format, uint32(len(data))/uint32(format/8), data)
	}
	setProp("_NET_WM_NAME", "UTF8_STRING", 8, []byte(title))
	setProp("WM_CLASS", "STRING", 8, []byte("cuatest\x00CuaTest\x00"))
	pid := make([]byte, 4)
	binary.LittleEndian.PutUint32(pid, uint32(os.Getpid()))
	setProp("_NET_WM_PID", "CARDINAL", 32, pid)
	gid, _ := c.NewId()
	gc := xproto.Gcontext(gid)
	xproto.CreateGC(c, gc, xproto.Drawable(win), 0, nil)
	xc := &xclient{c: c, win: win, w: w, h: h, fills: fills, gc: gc, events: make(chan xgb.Event, 1024)}
	xproto.MapWindow(c, win)
	go xc.loop()
	return xc
}

func (xc *xclient) paint() {
	for _, f := range xc.fills {
		xproto.ChangeGC(xc.c, xc.gc, xproto.GcForeground, []uint32{f.rgb})
		xproto.PolyFillRectangle(xc.c, xproto.Drawable(xc.win), xc.gc,
			[]xproto.Rectangle{{X: int16(f.x), Y: int16(f.y), Width: uint16(f.w), Height: uint16(f.h)}})
	}
	_, _ = xproto.GetInputFocus(xc.c).Reply()
}

// loop repaints on Expose and hands every other event to the test.
func (xc *xclient) loop() {
	for {
		ev, err := xc.c.WaitForEvent()
		if ev == nil && err == nil {
			close(xc.events)
			return
		}
		if _, ok := ev.(xproto.ExposeEvent); ok {
			xc.paint()
			continue
		}
		if ev != nil {
			select {
			case xc.events <- ev:
			default:
			}
		}
	}
}

// next returns the next event of type T within the timeout.
func next[T xgb.Event](t testing.TB, xc *xclient, timeout time.Duration) T {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-xc.events:
			if !ok {
				t.Fatal("test client: connection closed")
			}
			if e, ok := ev.(T); ok {
				return e
			}
		case <-deadline:
			var zero T
			t.Fatalf("test client: no %T within %s", zero, timeout)
			return zero
		}
	}
}

// drain drops the events received so far.
func (xc *xclient) drain() {
	for {
		select {
		case <-xc.events:
		default:
			return
		}
	}
}
