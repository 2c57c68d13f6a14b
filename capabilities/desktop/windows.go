package desktop

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"

	"github.com/trycua/cua-spacesd/api"
)

const (
	// maxPropWords bounds one property read (1 MiB of title or list).
	maxPropWords = 1 << 18
	// wmSettleTimeout bounds the wait for the window manager to carry out
	// an activate or move request.
	wmSettleTimeout = 2 * time.Second
	wmSettlePoll    = 10 * time.Millisecond
	// ewmhSourcePager marks our client messages as coming from a pager, the
	// source window managers obey without focus-stealing prevention.
	ewmhSourcePager = 2
	// gravityStatic makes _NET_MOVERESIZE_WINDOW coordinates the client
	// window's own, matching Window.Bounds.
	gravityStatic = 10
)

// windowProp reads a 32-bit property as a list of words.
func (x *xconn) windowProp(ctx context.Context, w xproto.Window, name string) ([]uint32, error) {
	a, err := x.atom(ctx, name)
	if err != nil {
		return nil, err
	}
	r, err := x.getProperty(ctx, w, a, name)
	if err != nil {
		return nil, err
	}
	if r.Format != 32 {
		return nil, nil
	}
	out := make([]uint32, r.ValueLen)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(r.Value[i*4:])
	}
	return out, nil
}

// stringProp reads a text property.
func (x *xconn) stringProp(ctx context.Context, w xproto.Window, name string) (string, error) {
	a, err := x.atom(ctx, name)
	if err != nil {
		return "", err
	}
	r, err := x.getProperty(ctx, w, a, name)
	if err != nil {
		return "", err
	}
	if r.Format != 8 {
		return "", nil
	}
	return string(r.Value), nil
}

func (x *xconn) getProperty(ctx context.Context, w xproto.Window, a xproto.Atom, name string) (*xproto.GetPropertyReply, error) {
	return await(ctx, x, "read property "+name, func() (*xproto.GetPropertyReply, error) {
		return xproto.GetProperty(x.c, false, w, a, xproto.GetPropertyTypeAny, 0, maxPropWords).Reply()
	})
}

// clientList is the EWMH list of managed windows, in mapping order.
func (x *xconn) clientList(ctx context.Context) ([]xproto.Window, error) {
	ws, err := x.windowProp(ctx, x.root, "_NET_CLIENT_LIST")
	if err != nil {
		return nil, err
	}
	out := make([]xproto.Window, len(ws))
	for i, w := range ws {
		out[i] = xproto.Window(w)
	}
	return out, nil
}

func (x *xconn) activeWindow(ctx context.Context) (xproto.Window, error) {
	ws, err := x.windowProp(ctx, x.root, "_NET_ACTIVE_WINDOW")
	if len(ws) == 0 {
		return 0, err
	}
	return xproto.Window(ws[0]), nil
}

// describe builds the Window of w. Its requests are sent together and read
// afterwards, so a list costs about one round trip, not six per window.
type windowCookies struct {
	w        xproto.Window
	netName  xproto.GetPropertyCookie
	name     xproto.GetPropertyCookie
	class    xproto.GetPropertyCookie
	pid      xproto.GetPropertyCookie
	geom     xproto.GetGeometryCookie
	origin   xproto.TranslateCoordinatesCookie
	attrs    xproto.GetWindowAttributesCookie
	hasAtoms bool
}

func (x *xconn) ask(w xproto.Window, netWMName, netWMPid xproto.Atom) windowCookies {
	return windowCookies{
		w:       w,
		netName: xproto.GetProperty(x.c, false, w, netWMName, xproto.GetPropertyTypeAny, 0, maxPropWords),
		name:    xproto.GetProperty(x.c, false, w, xproto.AtomWmName, xproto.GetPropertyTypeAny, 0, maxPropWords),
		class:   xproto.GetProperty(x.c, false, w, xproto.AtomWmClass, xproto.GetPropertyTypeAny, 0, maxPropWords),
		pid:     xproto.GetProperty(x.c, false, w, netWMPid, xproto.AtomCardinal, 0, 1),
		geom:    xproto.GetGeometry(x.c, xproto.Drawable(w)),
		origin:  xproto.TranslateCoordinates(x.c, w, x.root, 0, 0),
		attrs:   xproto.GetWindowAttributes(x.c, w),
	}
}

func (x *xconn) answer(wc windowCookies, active xproto.Window, sw, sh int) (api.Window, error) {
	win := api.Window{WindowID: uint32(wc.w), Focused: wc.w == active}
	if r, err := wc.netName.Reply(); err == nil && r.Format == 8 {
		win.Title = string(r.Value)
	}
	if r, err := wc.name.Reply(); err == nil && r.Format == 8 && win.Title == "" {
		win.Title = string(r.Value)
	}
	if r, err := wc.class.Reply(); err == nil && r.Format == 8 {
		parts := strings.Split(strings.TrimRight(string(r.Value), "\x00"), "\x00")
		win.Instance = parts[0]
		win.AppName = parts[len(parts)-1]
	}
	if r, err := wc.pid.Reply(); err == nil && r.Format == 32 && r.ValueLen == 1 {
		win.PID = int(binary.LittleEndian.Uint32(r.Value))
	}
	g, gerr := wc.geom.Reply()
	o, oerr := wc.origin.Reply()
	a, aerr := wc.attrs.Reply()
	if gerr != nil || oerr != nil || aerr != nil {
		// The window went away between the list and the questions.
		return win, api.Errorf(api.KindNotFound, "window %d does not exist (any more)", wc.w)
	}
	win.Bounds = api.Rect{X: int(o.DstX), Y: int(o.DstY), Width: int(g.Width), Height: int(g.Height)}
	b := win.Bounds
	win.OnScreen = a.MapState == xproto.MapStateViewable &&
		b.X < sw && b.Y < sh && b.X+b.Width > 0 && b.Y+b.Height > 0
	return win, nil
}

// Windows lists the managed top-level windows; appName filters by a
// case-insensitive substring of the app name, instance or title.
func (d *Desktop) Windows(ctx context.Context, appName string) ([]api.Window, error) {
	x, err := d.use(ctx, api.FeatureWindows)
	if err != nil {
		return nil, err
	}
	return x.windows(ctx, appName)
}

// describe asks about the windows ids together (about one round trip for
// the lot) and answers them in order; a window gone meanwhile is left out.
func (x *xconn) describe(ctx context.Context, ids []xproto.Window) ([]api.Window, error) {
	active, err := x.activeWindow(ctx)
	if err != nil {
		return nil, err
	}
	sw, sh, err := x.screenSize(ctx)
	if err != nil {
		return nil, err
	}
	netWMName, err := x.atom(ctx, "_NET_WM_NAME")
	if err != nil {
		return nil, err
	}
	netWMPid, err := x.atom(ctx, "_NET_WM_PID")
	if err != nil {
		return nil, err
	}
	var out []api.Window
	err = x.do(ctx, "describe windows", func() error {
		cookies := make([]windowCookies, len(ids))
		for i, w := range ids {
			cookies[i] = x.ask(w, netWMName, netWMPid)
		}
		list := make([]api.Window, 0, len(ids))
		for _, wc := range cookies {
			if win, err := x.answer(wc, active, sw, sh); err == nil {
				list = append(list, win)
			}
		}
		out = list
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, x.fillStates(ctx, out) // wmstate.go
}

func (x *xconn) windows(ctx context.Context, appName string) ([]api.Window, error) {
	ids, err := x.clientList(ctx)
	if err != nil {
		return nil, err
	}
	all, err := x.describe(ctx, ids)
	if err != nil {
		return nil, err
	}
	needle := strings.ToLower(appName)
	out := make([]api.Window, 0, len(all))
	for _, win := range all {
		if needle != "" && !strings.Contains(strings.ToLower(win.AppName), needle) &&
			!strings.Contains(strings.ToLower(win.Instance), needle) &&
			!strings.Contains(strings.ToLower(win.Title), needle) {
			continue
		}
		out = append(out, win)
	}
	return out, nil
}

// window describes one managed window, or answers not_found.
func (x *xconn) window(ctx context.Context, id uint32) (api.Window, error) {
	ids, err := x.clientList(ctx)
	if err != nil {
		return api.Window{}, err
	}
	for _, w := range ids {
		if uint32(w) == id {
			ws, err := x.describe(ctx, []xproto.Window{w})
			if err != nil {
				return api.Window{}, err
			}
			if len(ws) == 1 {
				return ws[0], nil
			}
			return api.Window{}, api.Errorf(api.KindNotFound, "window %d does not exist (any more)", id)
		}
	}
	return api.Window{}, api.Errorf(api.KindNotFound, "no window %d on the desktop; list the windows first", id).
		WithHint("call GET /v1/windows for the current window ids")
}

// Window describes one window.
func (d *Desktop) Window(ctx context.Context, id uint32) (api.Window, error) {
	x, err := d.use(ctx, api.FeatureWindows)
	if err != nil {
		return api.Window{}, err
	}
	return x.window(ctx, id)
}

// clientMessage sends an EWMH request about w to the window manager.
func (x *xconn) clientMessage(ctx context.Context, w xproto.Window, msg string, data ...uint32) error {
	a, err := x.atom(ctx, msg)
	if err != nil {
		return err
	}
	var d [5]uint32
	copy(d[:], data)
	ev := xproto.ClientMessageEvent{
		Format: 32, Window: w, Type: a,
		Data: xproto.ClientMessageDataUnionData32New(d[:]),
	}
	mask := uint32(xproto.EventMaskSubstructureRedirect | xproto.EventMaskSubstructureNotify)
	return x.do(ctx, "send "+msg, func() error {
		return xerr("send "+msg, xproto.SendEventChecked(x.c, false, x.root, mask, string(ev.Bytes())).Check())
	})
}

// settle polls until cond holds or the window manager had its time; an
// error of cond (the display stopped answering) ends the wait.
func settle(ctx context.Context, cond func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(wmSettleTimeout)
	t := time.NewTicker(wmSettlePoll)
	defer t.Stop()
	for {
		ok, err := cond()
		if ok || err != nil {
			return ok, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-t.C:
		}
	}
}

// pickBroken is the error that ends a wait on the window manager: a
// connection given up; any other error may pass and is polled again.
func pickBroken(x *xconn, err error) error {
	if x.brokenErr() != nil {
		return err
	}
	return nil
}

// ActivateWindow raises and focuses a window and answers its new state.
func (d *Desktop) ActivateWindow(ctx context.Context, id uint32) (api.Window, error) {
	x, err := d.use(ctx, api.FeatureWindows)
	if err != nil {
		return api.Window{}, err
	}
	if _, err := x.window(ctx, id); err != nil {
		return api.Window{}, err
	}
	w := xproto.Window(id)
	active, err := x.activeWindow(ctx)
	if err != nil {
		return api.Window{}, err
	}
	if err := x.clientMessage(ctx, w, "_NET_ACTIVE_WINDOW", ewmhSourcePager, xproto.TimeCurrentTime, uint32(active)); err != nil {
		return api.Window{}, err
	}
	ok, err := settle(ctx, func() (bool, error) {
		a, err := x.activeWindow(ctx)
		return a == w, err
	})
	if err != nil {
		return api.Window{}, err
	}
	if !ok {
		return api.Window{}, api.Errorf(api.KindTimeout, "window manager %s did not activate window %d within %s", x.wm(ctx), id, wmSettleTimeout)
	}
	return x.window(ctx, id)
}

// CloseWindow asks a window to close, as its close button would.
func (d *Desktop) CloseWindow(ctx context.Context, id uint32) error {
	x, err := d.use(ctx, api.FeatureWindows)
	if err != nil {
		return err
	}
	if _, err := x.window(ctx, id); err != nil {
		return err
	}
	return x.clientMessage(ctx, xproto.Window(id), "_NET_CLOSE_WINDOW", xproto.TimeCurrentTime, ewmhSourcePager)
}

// SetWindowGeometry moves and/or resizes a window's content area.
func (d *Desktop) SetWindowGeometry(ctx context.Context, id uint32, req api.GeometryRequest) (api.Window, error) {
	x, err := d.use(ctx, api.FeatureWindows)
	if err != nil {
		return api.Window{}, err
	}
	cur, err := x.window(ctx, id)
	if err != nil {
		return api.Window{}, err
	}
	flags := uint32(gravityStatic) | ewmhSourcePager<<12
	var vals [4]uint32
	for i, v := range []*int{req.X, req.Y, req.Width, req.Height} {
		if v == nil {
			continue
		}
		if i >= 2 && (*v < 1 || *v > maxWindowSide) {
			return api.Window{}, api.Errorf(api.KindInvalidArgument, "window size %d is out of range 1-%d", *v, maxWindowSide)
		}
		if i < 2 && (*v < -maxWindowSide || *v > maxWindowSide) {
			return api.Window{}, api.Errorf(api.KindInvalidArgument, "window position %d is out of range", *v)
		}
		flags |= 1 << (8 + i)
		vals[i] = uint32(int32(*v))
	}
	if flags>>8&0xf == 0 {
		return cur, nil
	}
	if err := x.clientMessage(ctx, xproto.Window(id), "_NET_MOVERESIZE_WINDOW", flags, vals[0], vals[1], vals[2], vals[3]); err != nil {
		return api.Window{}, err
	}
	want := func(w api.Window) bool {
		return (req.X == nil || w.Bounds.X == *req.X) && (req.Y == nil || w.Bounds.Y == *req.Y) &&
			(req.Width == nil || w.Bounds.Width == *req.Width) && (req.Height == nil || w.Bounds.Height == *req.Height)
	}
	// A window manager may clamp the request (size hints, screen edges;
	// an xterm snaps to whole character cells and keeps its border around
	// the content): answer what it did rather than wait for an exact
	// match that never comes. The window has done what it will once its
	// bounds left the old ones and then held still for wmGeometryStill.
	last := cur
	var lastErr error
	var stillSince time.Time
	if _, err := settle(ctx, func() (bool, error) {
		w, err := x.window(ctx, id)
		lastErr = err
		if err != nil {
			return false, pickBroken(x, err)
		}
		moved := w.Bounds != last.Bounds
		last = w
		if want(w) {
			return true, nil
		}
		if w.Bounds == cur.Bounds {
			return false, nil // not moved yet
		}
		if moved || stillSince.IsZero() {
			stillSince = time.Now()
		}
		return time.Since(stillSince) >= wmGeometryStill, nil
	}); err != nil {
		return api.Window{}, err
	}
	if lastErr != nil {
		return api.Window{}, lastErr
	}
	return last, nil
}

// maxWindowSide bounds a requested window side (the X protocol's int16).
const maxWindowSide = 32767

// errLauncherDone says the launched process exited successfully and no
// window of its group appeared before the deadline.
var errLauncherDone = errors.New("the launched process exited")

// waitForWindowOf waits until a window of a process the app holds is
// listed: the app (pid) may be a launcher (a script, a shell line) whose
// child owns the window. exited delivers the launched process's exit: a
// failure ends the wait at once (*appExited); a clean exit does not, as a
// child may still show the window.
func (x *xconn) waitForWindowOf(ctx context.Context, pid int, holds func(pid int) bool, exited <-chan error) (*api.Window, error) {
	t := time.NewTicker(wmSettlePoll * 5)
	defer t.Stop()
	var failed error
	launcherDone := false
	for {
		ws, err := x.windows(ctx, "")
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		for _, w := range ws {
			if w.PID == pid || (w.PID > 0 && holds(w.PID)) {
				return &w, nil
			}
		}
		if failed != nil {
			return nil, &appExited{failed}
		}
		select {
		case <-ctx.Done():
			if launcherDone {
				return nil, fmt.Errorf("no window of the app of pid %d: %w (%w)", pid, ctx.Err(), errLauncherDone)
			}
			return nil, fmt.Errorf("no window of the app of pid %d: %w", pid, ctx.Err())
		case err := <-exited:
			// Look once more: the window may have come with the exit.
			exited, launcherDone, failed = nil, true, err
		case <-t.C:
		}
	}
}

// inProcessGroup reports whether process pid is in the process group pgid.
func inProcessGroup(pid, pgid int) bool {
	g, err := unix.Getpgid(pid)
	return err == nil && g == pgid
}
