package desktop

import (
	"context"
	"image"

	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
)

// maxDamageRects bounds the rectangles one frame reports and reads: a
// region of more (text drawn glyph by glyph) is taken as its bounding box,
// which costs one read instead of hundreds.
const maxDamageRects = 64

// initXFixes makes the XFixes extension usable on the connection, at
// version 2.0 or later: its regions carry the damage, and its cursor
// requests (images, notifications) are what a viewer draws the pointer
// from.
func (x *xconn) initXFixes() bool {
	if xfixes.Init(x.c) != nil {
		return false
	}
	// The extension refuses every other request until the version is
	// agreed. It is asked for its 5.0, the newest xgb speaks.
	fv, err := xfixes.QueryVersion(x.c, 5, 0).Reply()
	return err == nil && fv.MajorVersion >= 2
}

// initDamage makes the XDamage extension usable on the connection: the
// extension and XFixes (see initXFixes) must both be there and agree to
// the versions this code speaks (Damage 1.1).
func (x *xconn) initDamage() bool {
	if !x.hasXFixes || damage.Init(x.c) != nil {
		return false
	}
	_, err := damage.QueryVersion(x.c, 1, 1).Reply()
	return err == nil
}

// damageTracker accumulates, in the X server, what is drawn on one
// drawable; it wakes its owner once when the damage becomes non-empty
// (ReportLevelNonEmpty), and take hands the region over and clears it in
// one step, so nothing drawn in between is lost.
type damageTracker struct {
	x      *xconn
	on     xproto.Drawable // the tracked drawable
	id     damage.Damage
	region xfixes.Region // receives the damage on each take
	notify chan struct{} // one pending wake-up is enough
}

// trackDamage starts tracking drawable d. A window other than the root is
// also watched for its end (unmap, destroy), which draws nothing on it but
// must wake the owner: the server frees the damage with the window.
func (x *xconn) trackDamage(ctx context.Context, d xproto.Drawable) (*damageTracker, error) {
	t := &damageTracker{x: x, on: d, notify: make(chan struct{}, 1)}
	err := x.do(ctx, "track damage", func() error {
		var err error
		if t.id, err = damage.NewDamageId(x.c); err != nil {
			return xerr("new damage id", err)
		}
		if t.region, err = xfixes.NewRegionId(x.c); err != nil {
			return xerr("new region id", err)
		}
		// Registered before the damage exists, so its first event finds it.
		x.damageMu.Lock()
		x.damageSubs[t.id] = t
		x.damageMu.Unlock()
		if d != xproto.Drawable(x.root) {
			// Event masks are the daemon's own on that window: the app's
			// are untouched. The mask stays after the tracking ends (other
			// trackers may share it); the event loop ignores what no
			// tracker waits for.
			if err := xproto.ChangeWindowAttributesChecked(x.c, xproto.Window(d), xproto.CwEventMask,
				[]uint32{watchMask}).Check(); err != nil {
				return xerr("watch the window", err)
			}
		}
		if err := xfixes.CreateRegionChecked(x.c, t.region, nil).Check(); err != nil {
			return xerr("create region", err)
		}
		return xerr("create damage", damage.CreateChecked(x.c, t.id, d, damage.ReportLevelNonEmpty).Check())
	})
	if err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// onDamage is the event loop's: it wakes the damage's tracker.
func (x *xconn) onDamage(e damage.NotifyEvent) {
	x.damageMu.Lock()
	t := x.damageSubs[e.Damage]
	x.damageMu.Unlock()
	if t != nil {
		t.wake()
	}
}

// onWindowGone is the event loop's: it wakes the trackers of a window
// that was unmapped or destroyed.
func (x *xconn) onWindowGone(w xproto.Window) {
	x.damageMu.Lock()
	defer x.damageMu.Unlock()
	for _, t := range x.damageSubs {
		if t.on == xproto.Drawable(w) {
			t.wake()
		}
	}
}

func (t *damageTracker) wake() {
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// take returns the damage since the previous take, in the drawable's
// coordinates, and clears it; more than maxDamageRects come as their
// bounding box. Empty when nothing was drawn.
func (t *damageTracker) take(ctx context.Context) ([]image.Rectangle, error) {
	r, err := await(ctx, t.x, "take damage", func() (*xfixes.FetchRegionReply, error) {
		sub := damage.SubtractChecked(t.x.c, t.id, xfixes.RegionNone, t.region)
		r, err := xfixes.FetchRegion(t.x.c, t.region).Reply()
		if err != nil {
			return nil, err
		}
		// Answered by the reply above, no extra round trip; a failed
		// subtract (the window is gone) leaves the last take's region.
		if err := sub.Check(); err != nil {
			return nil, err
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	rect := func(r xproto.Rectangle) image.Rectangle {
		return image.Rect(int(r.X), int(r.Y), int(r.X)+int(r.Width), int(r.Y)+int(r.Height))
	}
	if len(r.Rectangles) > maxDamageRects {
		return []image.Rectangle{rect(r.Extents)}, nil
	}
	out := make([]image.Rectangle, 0, len(r.Rectangles))
	for _, rr := range r.Rectangles {
		if rr.Width > 0 && rr.Height > 0 {
			out = append(out, rect(rr))
		}
	}
	return out, nil
}

// close stops the tracking; the server forgets it with the connection
// anyway, so a dead connection is left alone.
func (t *damageTracker) close() {
	x := t.x
	x.damageMu.Lock()
	delete(x.damageSubs, t.id)
	x.damageMu.Unlock()
	if !x.alive() {
		return
	}
	_ = x.do(context.Background(), "stop tracking damage", func() error {
		if t.id != 0 {
			damage.Destroy(x.c, t.id)
		}
		if t.region != 0 {
			xfixes.DestroyRegion(x.c, t.region)
		}
		return nil
	})
}
