package desktop

import (
	"context"
	"image"
	"sync"
	"time"

	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
)

// How the pointer is followed. The X server tells a client of the
// pointer's motion only over its own windows, so the position is polled:
// often while it moves, seldom once it rests (an idle viewer costs a few
// round trips a second). A move the daemon makes itself (a viewer's or an
// agent's input, through XTEST) wakes the watchers at once, so that the
// resting poll only bounds how soon another program's move is seen. Its
// shape needs no polling: XFixes announces every change.
const (
	CursorMovingPoll  = 16 * time.Millisecond // about one display frame
	CursorRestingPoll = 250 * time.Millisecond
	// cursorRestAfter is how long the pointer stays put before it counts
	// as resting.
	cursorRestAfter = time.Second
	// MaxCursorSide bounds a cursor image's width and height: X cursors
	// are at most a few dozen pixels; a larger one is not drawn by a
	// viewer (its shape is reported without an image).
	MaxCursorSide = 256
)

// Cursor is the pointer as a viewer draws it.
type Cursor struct {
	// X and Y are the pointer's position in the target's pixels: the
	// screen's, or the window's own (its top-left is 0, 0; the pointer
	// may be outside it).
	X, Y int
	// Serial names the shape (XFixes' cursor serial): the same shape
	// shown again has the same serial.
	Serial uint32
	// Shape is set when Serial differs from the one before (and first).
	Shape *CursorShape
}

// CursorShape is a cursor's image: the pixel at (HotX, HotY) is where
// the pointer is.
type CursorShape struct {
	// Image is nil for a cursor over MaxCursorSide.
	Image      *image.NRGBA
	HotX, HotY int
}

// WatchCursor calls fn with the pointer of the screen (windowID 0) or of
// one window: at once, then whenever its position or shape changes, until
// ctx ends (answering nil) or the display or the window goes (answering
// why). fn runs on the calling goroutine; a slow fn delays the next poll,
// never queues changes (only the latest position matters).
func (d *Desktop) WatchCursor(ctx context.Context, windowID uint32, fn func(Cursor)) error {
	x, err := d.use(ctx, api.FeatureScreenshot)
	if err != nil {
		return err
	}
	if !x.hasXFixes {
		return api.CapabilityMissing(api.FeatureScreenshot, "the X display lacks XFixes 2, so the cursor cannot be followed")
	}
	shapes, moves, stop, err := x.subscribeCursor(ctx)
	if err != nil {
		return err
	}
	defer stop()
	target := x.root
	if windowID != 0 {
		target = xproto.Window(windowID)
	}
	var last Cursor
	first, lastMove := true, time.Now()
	shapeChanged := true // the first call carries the shape
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-shapes:
			shapeChanged = true
		case <-moves:
			lastMove = time.Now() // polled often from now on
		case <-timer.C:
		}
		cur := last
		cur.Shape = nil
		p, err := await(ctx, x, "read the pointer", func() (*xproto.QueryPointerReply, error) {
			return xproto.QueryPointer(x.c, target).Reply()
		})
		if err != nil {
			return cursorErr(ctx, windowID, err)
		}
		cur.X, cur.Y = int(p.WinX), int(p.WinY)
		if shapeChanged {
			shapeChanged = false
			img, err := await(ctx, x, "read the cursor image", func() (*xfixes.GetCursorImageReply, error) {
				return xfixes.GetCursorImage(x.c).Reply()
			})
			if err != nil {
				return cursorErr(ctx, windowID, err)
			}
			if first || img.CursorSerial != last.Serial {
				cur.Serial = img.CursorSerial
				cur.Shape = cursorShape(img)
			}
		}
		now := time.Now()
		if first || cur.X != last.X || cur.Y != last.Y || cur.Shape != nil {
			if cur.X != last.X || cur.Y != last.Y {
				lastMove = now
			}
			first = false
			last = cur
			fn(cur)
		}
		wait := CursorMovingPoll
		if now.Sub(lastMove) > cursorRestAfter {
			wait = CursorRestingPoll
		}
		timer.Reset(wait)
	}
}

// cursorErr is the answer of a failed watch: nil when ctx ended, the
// window's absence as not_found, else the connection's error.
func cursorErr(ctx context.Context, windowID uint32, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	if windowID != 0 && api.KindOf(err) == api.KindEnv {
		return api.Errorf(api.KindNotFound, "window %d is gone: %v", windowID, err)
	}
	return err
}

// cursorShape converts XFixes' premultiplied ARGB to NRGBA.
func cursorShape(r *xfixes.GetCursorImageReply) *CursorShape {
	s := &CursorShape{HotX: int(r.Xhot), HotY: int(r.Yhot)}
	w, h := int(r.Width), int(r.Height)
	if w == 0 || h == 0 || w > MaxCursorSide || h > MaxCursorSide || len(r.CursorImage) < w*h {
		return s
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i, argb := range r.CursorImage[:w*h] {
		a := argb >> 24
		px := img.Pix[i*4 : i*4+4 : i*4+4]
		px[3] = byte(a)
		if a == 0 {
			continue
		}
		for c, shift := range [3]uint32{16, 8, 0} {
			px[c] = byte(min((argb>>shift&0xff)*255/a, 255))
		}
	}
	s.Image = img
	return s
}

// cursorSubs are the watchers of one connection's cursor shape.
type cursorSubs struct {
	// selectMu guards selected, and is held across the round trip that
	// asks for the notifications; mu, which the event loop takes, never
	// is.
	selectMu sync.Mutex
	selected bool // XFixes cursor notifications asked for on the root
	mu       sync.Mutex
	subs     map[chan struct{}]struct{}
	// moves wake the watchers when the daemon moved the pointer.
	moves map[chan struct{}]struct{}
}

// subscribeCursor answers a channel that gets a wake-up when the cursor's
// shape changes, and one that gets one when the daemon moved the
// pointer; stop ends them.
func (x *xconn) subscribeCursor(ctx context.Context) (shapes, moves <-chan struct{}, stop func(), err error) {
	ch, mv := make(chan struct{}, 1), make(chan struct{}, 1)
	x.cursor.selectMu.Lock()
	if !x.cursor.selected {
		// Once per connection: the selection is the connection's, and
		// stays while it lives (a watcher more or less costs nothing).
		err := x.do(ctx, "follow the cursor shape", func() error {
			return xerr("select cursor input", xfixes.SelectCursorInputChecked(x.c, x.root, xfixes.CursorNotifyMaskDisplayCursor).Check())
		})
		if err != nil {
			x.cursor.selectMu.Unlock()
			return nil, nil, nil, err
		}
		x.cursor.selected = true
	}
	x.cursor.selectMu.Unlock()
	x.cursor.mu.Lock()
	defer x.cursor.mu.Unlock()
	if x.cursor.subs == nil {
		x.cursor.subs, x.cursor.moves = map[chan struct{}]struct{}{}, map[chan struct{}]struct{}{}
	}
	x.cursor.subs[ch], x.cursor.moves[mv] = struct{}{}, struct{}{}
	return ch, mv, func() {
		x.cursor.mu.Lock()
		delete(x.cursor.subs, ch)
		delete(x.cursor.moves, mv)
		x.cursor.mu.Unlock()
	}, nil
}

// onCursor is the event loop's: it wakes every watcher of the shape.
func (x *xconn) onCursor() {
	x.cursor.mu.Lock()
	defer x.cursor.mu.Unlock()
	wakeAll(x.cursor.subs)
}

// onPointerMoved wakes every watcher of the pointer: the daemon moved it.
func (x *xconn) onPointerMoved() {
	x.cursor.mu.Lock()
	defer x.cursor.mu.Unlock()
	wakeAll(x.cursor.moves)
}

func wakeAll(chs map[chan struct{}]struct{}) {
	for ch := range chs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
