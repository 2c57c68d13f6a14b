package desktop

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
)

// maxWindowDepth bounds the walks of the window tree that confinement
// makes: down from the root at a point, up from the focus.
const maxWindowDepth = 64

// pointerRoot is the focus value X answers while the keyboard follows the
// pointer: keys go to whatever window is under it.
const pointerRoot = 1

// ErrDropped is the cause (errors.Is) of every confined input that did
// not go out because it would reach another window than its own.
var ErrDropped = errors.New("input dropped: it would reach another window")

// errFocusMoved: keys went out, but the focus left the window while they
// did; what they held down was released.
var errFocusMoved = fmt.Errorf("%w: the keyboard focus moved", ErrDropped)

func isDropped(err error) bool { return errors.Is(err, ErrDropped) }

// scope confines an input session to one window.
type scope struct {
	ref WindowRef
}

// WindowInput is input confined to one window, for a viewer of that
// window's stream, whose holder may reach that window only:
//   - a pointer event goes out only at a point of the window that the
//     window itself (or a window inside it) shows: a point outside its
//     bounds, or where another window covers it, is dropped (ErrDropped);
//     the release of a button the viewer holds still goes out, without
//     moving the pointer, so that no button stays down;
//   - keys and text go out only while the window (or a window inside it)
//     has the keyboard focus, checked before they are sent and again
//     after; when the focus moved meanwhile, keys still down are
//     released at once (see flush);
//   - its first click, scroll, key or text activates the window (raises
//     and focuses it), as a person's first click on it would.
//
// Every call also checks that the window is still the one ref named
// (not_found once it was destroyed, even if its id came back).
type WindowInput struct {
	d    *Desktop
	sc   *scope
	held *Held

	mu        sync.Mutex
	activated bool
}

// NewWindowInput starts the confined input of one viewer of ref's window.
func (d *Desktop) NewWindowInput(ref WindowRef) *WindowInput {
	sc := &scope{ref: ref}
	return &WindowInput{d: d, sc: sc, held: &Held{d: d, sc: sc}}
}

// Move moves the pointer to (x, y) of the window.
func (w *WindowInput) Move(ctx context.Context, x, y float64) (api.InputResult, error) {
	return w.d.moveMouse(ctx, w.sc, api.MouseMoveRequest{X: x, Y: y})
}

// Click clicks at a point of the window (req's Pointer is ignored: the
// point is the window's).
func (w *WindowInput) Click(ctx context.Context, req api.ClickRequest) (api.InputResult, error) {
	w.activate(ctx)
	req.Pointer = api.Pointer{}
	return w.d.click(ctx, w.sc, req)
}

// Button presses (down) or releases a button at a point of the window,
// held between calls (see Held).
func (w *WindowInput) Button(ctx context.Context, button string, down bool, x, y float64) (api.InputResult, error) {
	if down {
		w.activate(ctx)
	}
	return w.held.Button(ctx, button, down, api.Pointer{}, x, y)
}

// Scroll turns the wheel at a point of the window.
func (w *WindowInput) Scroll(ctx context.Context, x, y float64, dx, dy int) (api.InputResult, error) {
	w.activate(ctx)
	return w.d.scroll(ctx, w.sc, api.ScrollRequest{X: &x, Y: &y, DX: dx, DY: dy})
}

// Key presses one key or hotkey.
func (w *WindowInput) Key(ctx context.Context, key string) (api.InputResult, error) {
	w.activate(ctx)
	return w.d.key(ctx, w.sc, key)
}

// HoldKey presses (down) or releases one key, held between calls.
func (w *WindowInput) HoldKey(ctx context.Context, key string, down bool) (api.InputResult, error) {
	if down {
		w.activate(ctx)
	}
	return w.held.Key(ctx, key, down)
}

// Type types text.
func (w *WindowInput) Type(ctx context.Context, text string) (api.InputResult, error) {
	w.activate(ctx)
	return w.d.typeText(ctx, w.sc, text)
}

// Close releases whatever the viewer still holds down.
func (w *WindowInput) Close(ctx context.Context) error { return w.held.Close(ctx) }

// activate raises and focuses the window once, before the viewer's first
// input that is more than a motion: its keys have a window to go to, and
// its first click lands on the window rather than on one covering it. A
// failure is left to the checks of the input itself.
func (w *WindowInput) activate(ctx context.Context) {
	w.mu.Lock()
	first := !w.activated
	w.activated = true
	w.mu.Unlock()
	if !first {
		return
	}
	if w.d.CheckWindow(ctx, w.sc.ref) != nil {
		return // a window that took the id is not raised
	}
	if _, err := w.d.ActivateWindow(ctx, w.sc.ref.ID); err != nil {
		w.d.log.Debug("activate the window of a confined input", "window", w.sc.ref.ID, "err", err)
	}
}

// point maps a point of the session's input to the screen: by the
// coordinate rule (toScreen), or, for a confined session, from the
// window's own pixels (at scale 1: p is not read) and only where the
// window shows it.
func (s *session) point(ctx context.Context, p api.Pointer, px, py float64) (int, int, error) {
	if s.scope == nil {
		return s.x.toScreen(ctx, p, px, py)
	}
	return s.x.windowPoint(ctx, s.scope.ref, px, py)
}

// windowPoint maps (px, py), pixels of ref's window, to the screen pixel
// whose centre it covers, and answers ErrDropped unless the deepest window
// there is ref's window or one inside it (X's own answer: TranslateCoordinates
// walks the mapped children in stacking order, input shapes included).
func (x *xconn) windowPoint(ctx context.Context, ref WindowRef, px, py float64) (int, int, error) {
	if math.IsNaN(px) || math.IsNaN(py) || math.IsInf(px, 0) || math.IsInf(py, 0) {
		return 0, 0, api.Errorf(api.KindInvalidArgument, "point (%v, %v): the point must be finite", px, py)
	}
	wx, wy := math.Floor(px+0.5), math.Floor(py+0.5)
	win := xproto.Window(ref.ID)
	var (
		gone          error
		mask          uint32
		bounds        api.Rect
		sw, sh        int
		inside, shown bool
	)
	err := x.do(ctx, "place the point in its window", func() error {
		ac := xproto.GetWindowAttributes(x.c, win)
		gc := xproto.GetGeometry(x.c, xproto.Drawable(win))
		oc := xproto.TranslateCoordinates(x.c, win, x.root, 0, 0)
		rc := xproto.GetGeometry(x.c, xproto.Drawable(x.root))
		a, aerr := ac.Reply()
		g, gerr := gc.Reply()
		o, oerr := oc.Reply()
		r, rerr := rc.Reply()
		if rerr != nil {
			return xerr("read the screen size", rerr)
		}
		if aerr != nil || gerr != nil || oerr != nil {
			gone = errWindowReplaced(ref.ID)
			return nil
		}
		mask = a.YourEventMask
		bounds = api.Rect{X: int(o.DstX), Y: int(o.DstY), Width: int(g.Width), Height: int(g.Height)}
		sw, sh = int(r.Width), int(r.Height)
		inside = wx >= 0 && wy >= 0 && wx < float64(bounds.Width) && wy < float64(bounds.Height)
		sx, sy := bounds.X+int(wx), bounds.Y+int(wy)
		if !inside || sx < 0 || sy < 0 || sx >= sw || sy >= sh {
			return nil // answered below, without a walk
		}
		var err error
		shown, err = x.shows(win, sx, sy)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	if gone != nil {
		return 0, 0, gone
	}
	if x.watch.lookup(ref, mask) == nil {
		return 0, 0, errWindowReplaced(ref.ID)
	}
	sx, sy := bounds.X+int(wx), bounds.Y+int(wy)
	switch {
	case !inside:
		return 0, 0, dropped("point (%v, %v) is outside window %d (%dx%d): a window's stream reaches that window only", px, py, ref.ID, bounds.Width, bounds.Height)
	case sx < 0 || sy < 0 || sx >= sw || sy >= sh:
		return 0, 0, dropped("point (%v, %v) of window %d is off the %dx%d screen, where no input reaches it", px, py, ref.ID, sw, sh)
	case !shown:
		return 0, 0, dropped("another window covers window %d at its point (%v, %v): the input would reach that window", ref.ID, px, py)
	}
	return sx, sy, nil
}

// shows reports whether screen pixel (sx, sy) belongs to win or a window
// inside it: the walk from the root down through the child that holds
// the point at each level meets win. Raw requests: run inside do.
func (x *xconn) shows(win xproto.Window, sx, sy int) (bool, error) {
	at := x.root
	for range maxWindowDepth {
		r, err := xproto.TranslateCoordinates(x.c, x.root, at, int16(sx), int16(sy)).Reply()
		if err != nil {
			return false, nil // a window of the walk went away: not shown
		}
		if r.Child == xproto.WindowNone {
			return false, nil
		}
		if r.Child == win {
			return true, nil
		}
		at = r.Child
	}
	return false, nil
}

// pressesKey reports whether q presses a key (releases always go out: a
// key left down is worse than a release another window sees).
func pressesKey(q []fakeEvent) bool {
	for _, e := range q {
		if e.typ == evKeyPress {
			return true
		}
	}
	return false
}

// keysAllowed answers nil while ref's window is the one it named and has
// the keyboard focus, else why not. Raw requests: run inside do.
func (x *xconn) keysAllowed(ref WindowRef) error {
	ac := xproto.GetWindowAttributes(x.c, xproto.Window(ref.ID))
	fc := xproto.GetInputFocus(x.c)
	a, aerr := ac.Reply()
	f, ferr := fc.Reply()
	if ferr != nil {
		return xerr("read the keyboard focus", ferr)
	}
	if aerr != nil || x.watch.lookup(ref, a.YourEventMask) == nil {
		return errWindowReplaced(ref.ID)
	}
	if !x.focusWithin(xproto.Window(ref.ID), f.Focus) {
		return dropped("window %d does not have the keyboard focus (another window has it): keys of a window's stream go to that window only; click in it first", ref.ID)
	}
	return nil
}

// focusStayed checks, after keys went out, that the focus (the answer of
// the sync that followed them) is still in ref's window.
func (x *xconn) focusStayed(ref WindowRef, focus xproto.Window) error {
	if x.focusWithin(xproto.Window(ref.ID), focus) {
		return nil
	}
	return api.Errorf(api.KindForbidden, "the keyboard focus left window %d while its keys went out: the keys still down were released", ref.ID).
		WithCause(errFocusMoved).WithHint("click in the window to focus it again")
}

// focusWithin reports whether focus is win or a window inside it. Raw
// requests: run inside do.
func (x *xconn) focusWithin(win, focus xproto.Window) bool {
	w := focus
	for range maxWindowDepth {
		switch w {
		case win:
			return true
		case xproto.WindowNone, pointerRoot, x.root:
			return false
		}
		t, err := xproto.QueryTree(x.c, w).Reply()
		if err != nil {
			return false
		}
		w = t.Parent
	}
	return false
}

// forgetPresses takes the keys and buttons that q pressed out of what
// the session holds: q was refused, so nothing of it went out, and a
// release of them would reach another window for nothing.
func (s *session) forgetPresses(q []fakeEvent) {
	for _, e := range q {
		switch e.typ {
		case evKeyPress:
			s.keys = removeLast(s.keys, xproto.Keycode(e.detail))
		case evButtonPress:
			s.btns = removeLast(s.btns, e.detail)
		}
	}
}

// dropped is a confined input's refusal: forbidden, caused by ErrDropped.
func dropped(format string, args ...any) error {
	return api.Errorf(api.KindForbidden, format, args...).WithCause(ErrDropped).
		WithHint("input of a window's stream reaches that window only: use a point the window shows, or a desktop stream")
}
