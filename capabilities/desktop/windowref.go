package desktop

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
)

// WindowRef names one window as it was when the daemon saw it. An X id
// alone does not: the X server hands a destroyed window's id out again
// (a new client in the freed client slot allocates the same ids), so a
// grant bound to an id alone would pass to whatever app comes next. Gen
// is the daemon's generation of that id: a new one each time the daemon
// starts watching the id, never shared by two windows (a window's
// DestroyNotify ends its generation).
type WindowRef struct {
	ID  uint32
	Gen uint64
}

// watchMask is the daemon's own event mask on a client window: the end
// of the window (DestroyNotify) and of its mapping (UnmapNotify). The
// damage tracker selects the same, so neither undoes the other.
const watchMask = xproto.EventMaskStructureNotify

// watched is a window whose destruction the connection watches.
type watched struct {
	gen  uint64
	gone chan struct{} // closed when the window is destroyed, or the connection ends
	once sync.Once
}

func (w *watched) end() { w.once.Do(func() { close(w.gone) }) }

// watchedWindows are the windows a connection watches, by id. A
// generation lives only as long as the connection that saw it: events
// missed while no connection listened could hide a reuse of the id.
type watchedWindows struct {
	mu    sync.Mutex
	m     map[xproto.Window]*watched
	ended bool // the connection ended: every generation of it is over
}

// forget ends the generation of w (DestroyNotify).
func (ws *watchedWindows) forget(w xproto.Window) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if e := ws.m[w]; e != nil {
		e.end()
		delete(ws.m, w)
	}
}

// endAll ends every generation: the connection ended.
func (ws *watchedWindows) endAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.ended = true
	for w, e := range ws.m {
		e.end()
		delete(ws.m, w)
	}
}

// lookup answers the entry of ref when it is still current by the
// daemon's bookkeeping and by the server: the window still carries the
// event mask the daemon selected on it (a new window of the same id does
// not, even before the old one's DestroyNotify reached the event loop).
func (ws *watchedWindows) lookup(ref WindowRef, mask uint32) *watched {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	e := ws.m[xproto.Window(ref.ID)]
	if e == nil || e.gen != ref.Gen {
		return nil
	}
	if mask&watchMask == 0 {
		// Another window has the id: the old one's end is on its way.
		e.end()
		delete(ws.m, xproto.Window(ref.ID))
		return nil
	}
	return e
}

// newGenSeed starts a Desktop's generations at a random point, so that a
// daemon restarted on the same token (whose tickets stay valid) never
// hands out a generation of the run before it.
func newGenSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1 // room to count up
}

// WindowRef answers the current generation of a managed window, and
// watches the window from now on, so that its destruction ends the
// generation. not_found for a window that is not listed.
func (d *Desktop) WindowRef(ctx context.Context, id uint32) (WindowRef, error) {
	x, err := d.use(ctx, api.FeatureWindows)
	if err != nil {
		return WindowRef{}, err
	}
	if _, err := x.window(ctx, id); err != nil {
		return WindowRef{}, err
	}
	w := xproto.Window(id)
	mask, err := x.yourMask(ctx, id)
	if err != nil {
		return WindowRef{}, err
	}
	x.watch.mu.Lock()
	e := x.watch.m[w]
	if e != nil && mask&watchMask == 0 {
		e.end() // a new window of the same id
		delete(x.watch.m, w)
		e = nil
	}
	x.watch.mu.Unlock()
	if e != nil {
		return WindowRef{ID: id, Gen: e.gen}, nil
	}
	// Selected before the generation is recorded: a DestroyNotify can
	// only end a generation that is watched.
	err = x.do(ctx, "watch the window", func() error {
		return xerr("watch the window", xproto.ChangeWindowAttributesChecked(x.c, w, xproto.CwEventMask, []uint32{watchMask}).Check())
	})
	if err != nil {
		return WindowRef{}, windowGone(id, err)
	}
	x.watch.mu.Lock()
	defer x.watch.mu.Unlock()
	if x.watch.ended {
		return WindowRef{}, api.Errorf(api.KindTimeout, "X display %s: the connection ended while window %d was looked at; try again", d.display, id)
	}
	if e := x.watch.m[w]; e != nil { // another call watched it meanwhile
		return WindowRef{ID: id, Gen: e.gen}, nil
	}
	e = &watched{gen: d.gens.Add(1), gone: make(chan struct{})}
	x.watch.m[w] = e
	return WindowRef{ID: id, Gen: e.gen}, nil
}

// CheckWindow answers nil while ref names the window it named when it was
// made, and not_found once that window was destroyed (its id may name
// another window now).
func (d *Desktop) CheckWindow(ctx context.Context, ref WindowRef) error {
	_, err := d.watchedOf(ctx, ref)
	return err
}

// WindowGone answers a channel closed when ref's window is destroyed, or
// when the daemon can no longer tell (its X connection ended); not_found
// when that happened already.
func (d *Desktop) WindowGone(ctx context.Context, ref WindowRef) (<-chan struct{}, error) {
	e, err := d.watchedOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	return e.gone, nil
}

func (d *Desktop) watchedOf(ctx context.Context, ref WindowRef) (*watched, error) {
	x, err := d.use(ctx, api.FeatureWindows)
	if err != nil {
		return nil, err
	}
	return x.current(ctx, ref)
}

// current answers ref's entry while ref's window is the one it named.
func (x *xconn) current(ctx context.Context, ref WindowRef) (*watched, error) {
	mask, err := x.yourMask(ctx, ref.ID)
	if err != nil {
		return nil, err
	}
	if e := x.watch.lookup(ref, mask); e != nil {
		return e, nil
	}
	return nil, errWindowReplaced(ref.ID)
}

// yourMask is the daemon's own event mask on window id; not_found when
// there is no such window.
func (x *xconn) yourMask(ctx context.Context, id uint32) (uint32, error) {
	a, err := await(ctx, x, "read the window's attributes", func() (*xproto.GetWindowAttributesReply, error) {
		return xproto.GetWindowAttributes(x.c, xproto.Window(id)).Reply()
	})
	if err != nil {
		return 0, windowGone(id, err)
	}
	return a.YourEventMask, nil
}

// windowGone turns the X error of a request about window id into
// not_found; a timeout or cancellation stays what it is.
func windowGone(id uint32, err error) error {
	if ae, ok := err.(*api.Error); ok && ae.Kind != api.KindEnv {
		return err
	}
	return api.Errorf(api.KindNotFound, "window %d does not exist (any more)", id).
		WithHint("call GET /v1/windows for the current window ids")
}

// errWindowReplaced is the answer for a ref whose window was destroyed.
func errWindowReplaced(id uint32) error {
	return api.Errorf(api.KindNotFound, "window %d was closed: its id may now name another window", id).
		WithHint("list the windows again (GET /v1/windows) and use the window's current id")
}
