package desktop

import (
	"context"
	"encoding/binary"
	"slices"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
)

// Window states as the window manager keeps them: ICCCM's WM_STATE on the
// client window and EWMH's _NET_WM_STATE list of atoms.
const (
	// iccmIconicState is WM_STATE's (and WM_CHANGE_STATE's) value of an
	// iconified (minimized) window.
	iccmIconicState = 3
	// netWMStateRemove and netWMStateAdd are the actions of a
	// _NET_WM_STATE client message.
	netWMStateRemove = 0
	netWMStateAdd    = 1
)

// The _NET_WM_STATE atoms a state is read from and written with.
const (
	atomWMState         = "WM_STATE"
	atomNetWMState      = "_NET_WM_STATE"
	atomHidden          = "_NET_WM_STATE_HIDDEN"
	atomMaximizedVert   = "_NET_WM_STATE_MAXIMIZED_VERT"
	atomMaximizedHorz   = "_NET_WM_STATE_MAXIMIZED_HORZ"
	atomFullscreen      = "_NET_WM_STATE_FULLSCREEN"
	atomWMChangeState   = "WM_CHANGE_STATE"
	atomNetActiveWindow = "_NET_ACTIVE_WINDOW"
)

// stateAtoms are the atoms windowState needs, interned once per connection.
type stateAtoms struct {
	wmState, netWMState, hidden, maxVert, maxHorz, fullscreen xproto.Atom
}

func (x *xconn) stateAtoms(ctx context.Context) (stateAtoms, error) {
	var a stateAtoms
	for _, p := range []struct {
		name string
		dst  *xproto.Atom
	}{
		{atomWMState, &a.wmState}, {atomNetWMState, &a.netWMState}, {atomHidden, &a.hidden},
		{atomMaximizedVert, &a.maxVert}, {atomMaximizedHorz, &a.maxHorz}, {atomFullscreen, &a.fullscreen},
	} {
		v, err := x.atom(ctx, p.name)
		if err != nil {
			return stateAtoms{}, err
		}
		*p.dst = v
	}
	return a, nil
}

// stateOf reads a window's state from its WM_STATE and _NET_WM_STATE
// replies. Minimized wins over the rest: an iconified window that is also
// maximized comes back maximized, but shows nothing now.
func (a stateAtoms) stateOf(wmState, netState *xproto.GetPropertyReply) api.WindowState {
	var atoms []xproto.Atom
	if netState != nil && netState.Format == 32 {
		for i := range int(netState.ValueLen) {
			atoms = append(atoms, xproto.Atom(binary.LittleEndian.Uint32(netState.Value[i*4:])))
		}
	}
	iconic := wmState != nil && wmState.Format == 32 && wmState.ValueLen >= 1 &&
		binary.LittleEndian.Uint32(wmState.Value) == iccmIconicState
	switch {
	case iconic || slices.Contains(atoms, a.hidden):
		return api.WindowMinimized
	case slices.Contains(atoms, a.fullscreen):
		return api.WindowFullscreen
	case slices.Contains(atoms, a.maxVert) && slices.Contains(atoms, a.maxHorz):
		return api.WindowMaximized
	}
	return api.WindowNormal
}

// fillStates sets the State of each window, asking about all of them
// together (one round trip for the lot). A window gone meanwhile keeps "".
func (x *xconn) fillStates(ctx context.Context, wins []api.Window) error {
	if len(wins) == 0 {
		return nil
	}
	a, err := x.stateAtoms(ctx)
	if err != nil {
		return err
	}
	// The op writes its own slice, never wins: an op abandoned by ctx may
	// still run after this call returned.
	states, err := await(ctx, x, "read window states", func() ([]api.WindowState, error) {
		type pair struct{ wm, net xproto.GetPropertyCookie }
		cookies := make([]pair, len(wins))
		for i, w := range wins {
			id := xproto.Window(w.WindowID)
			cookies[i] = pair{
				wm:  xproto.GetProperty(x.c, false, id, a.wmState, a.wmState, 0, 2),
				net: xproto.GetProperty(x.c, false, id, a.netWMState, xproto.AtomAtom, 0, maxPropWords),
			}
		}
		out := make([]api.WindowState, len(wins))
		for i, c := range cookies {
			wm, werr := c.wm.Reply()
			net, nerr := c.net.Reply()
			if werr == nil && nerr == nil {
				out[i] = a.stateOf(wm, net)
			}
		}
		return out, nil
	})
	if err != nil {
		return err
	}
	for i := range wins {
		wins[i].State = states[i]
	}
	return nil
}

// wmGeometryStill is how long the bounds of a window whose state changed
// hold still before the answer takes them as final.
const wmGeometryStill = 150 * time.Millisecond

// SetWindowState minimizes, maximizes or restores (api.WindowNormal) a
// window and answers it once the window manager has done so. Restoring
// leaves minimized, maximized and fullscreen alike; maximizing a minimized
// window shows it first.
func (d *Desktop) SetWindowState(ctx context.Context, id uint32, state api.WindowState) (api.Window, error) {
	switch state {
	case api.WindowNormal, api.WindowMinimized, api.WindowMaximized:
	default:
		return api.Window{}, api.Errorf(api.KindInvalidArgument,
			"window state %q is not one of %q, %q, %q", state, api.WindowNormal, api.WindowMinimized, api.WindowMaximized)
	}
	x, err := d.use(ctx, api.FeatureWindows)
	if err != nil {
		return api.Window{}, err
	}
	cur, err := x.window(ctx, id)
	if err != nil {
		return api.Window{}, err
	}
	if cur.State == state {
		return cur, nil
	}
	if err := x.requestState(ctx, cur, state); err != nil {
		return api.Window{}, err
	}
	// Into maximized, or out of maximized or fullscreen, the window
	// manager also changes the geometry, and it may do so after it sets
	// the state, and in steps (openbox moves the frame, then resizes the
	// client): the answer waits for bounds that held still a while, after
	// leaving the old ones or (for a window that already had that size)
	// not, so that the bounds it answers are the new ones.
	resizes := state == api.WindowMaximized ||
		(state == api.WindowNormal && (cur.State == api.WindowMaximized || cur.State == api.WindowFullscreen))
	var last api.Window
	var stillSince time.Time
	ok, err := settle(ctx, func() (bool, error) {
		w, err := x.window(ctx, id)
		if err != nil {
			return false, err
		}
		moved := w.Bounds != last.Bounds
		last = w
		// The state property may change before the window is mapped or
		// unmapped: a minimized window is off screen, the others on it.
		if w.State != state || w.OnScreen != (state != api.WindowMinimized) {
			return false, nil
		}
		if !resizes {
			return true, nil
		}
		if moved || stillSince.IsZero() {
			stillSince = time.Now()
		}
		return time.Since(stillSince) >= wmGeometryStill, nil
	})
	if err != nil {
		return api.Window{}, err
	}
	if !ok {
		if ctx.Err() != nil {
			return api.Window{}, x.ctxErr(ctx, "wait for the window manager")
		}
		return api.Window{}, api.Errorf(api.KindTimeout, "window manager %s did not make window %d %s within %s (it is %s)",
			x.wm(ctx), id, state, wmSettleTimeout, last.State)
	}
	return last, nil
}

// requestState sends the window manager the requests that take cur to
// state, as a pager would.
func (x *xconn) requestState(ctx context.Context, cur api.Window, state api.WindowState) error {
	w := xproto.Window(cur.WindowID)
	if state == api.WindowMinimized {
		// ICCCM 4.1.4: a client iconifies itself with this message to the
		// root; window managers honour it from anyone.
		return x.clientMessage(ctx, w, atomWMChangeState, iccmIconicState)
	}
	if cur.State == api.WindowMinimized {
		// EWMH: activating an iconified window de-iconifies it. (Removing
		// _NET_WM_STATE_HIDDEN is not a request the spec allows.)
		active, err := x.activeWindow(ctx)
		if err != nil {
			return err
		}
		if err := x.clientMessage(ctx, w, atomNetActiveWindow, ewmhSourcePager, xproto.TimeCurrentTime, uint32(active)); err != nil {
			return err
		}
	}
	maxV, err := x.atom(ctx, atomMaximizedVert)
	if err != nil {
		return err
	}
	maxH, err := x.atom(ctx, atomMaximizedHorz)
	if err != nil {
		return err
	}
	if state == api.WindowMaximized {
		return x.clientMessage(ctx, w, atomNetWMState, netWMStateAdd, uint32(maxV), uint32(maxH), ewmhSourcePager)
	}
	// Normal: leave maximized and fullscreen, whichever the window is in
	// (removing a property it does not have is a no-op).
	full, err := x.atom(ctx, atomFullscreen)
	if err != nil {
		return err
	}
	if err := x.clientMessage(ctx, w, atomNetWMState, netWMStateRemove, uint32(full), 0, ewmhSourcePager); err != nil {
		return err
	}
	return x.clientMessage(ctx, w, atomNetWMState, netWMStateRemove, uint32(maxV), uint32(maxH), ewmhSourcePager)
}
