package desktop

import (
	"context"
	"errors"
	"image"
	"sync"

	"github.com/trycua/cua-spacesd/api"
)

// Frame is one capture of a Capturer's target, as the X server holds it:
// 32-bit little-endian BGRX pixels (B, G, R, then a byte to ignore), not
// converted.
type Frame struct {
	// Pix holds the pixels; row y starts at Pix[y*Stride].
	Pix           []byte
	Stride        int
	Width, Height int
	// Bounds is the captured area in screen pixels: the screen, or the
	// window's area. A window's frame pixel (x, y) is the window's point
	// (x, y), also where the window hangs off the screen.
	Bounds api.Rect
	// Damage lists what changed since the previous frame, as disjoint
	// rectangles of frame pixels; every other pixel is as it was. Unset
	// when Full.
	Damage []image.Rectangle
	// Full says every pixel is to be taken as new: the first frame, one
	// asked for with RequestFull, a frame after the target changed size
	// (or, read from the screen, place), after a reconnect or an error,
	// and every frame of a display without XDamage, where what changed is
	// unknown.
	Full bool
}

// Capturer yields the frames of one target, the screen or a window, as
// they change, for a stream: it tracks what the X server draws there
// (XDamage) and reads only the changed rectangles into one buffer it
// keeps, which holds the whole current image.
//
// Next is for one goroutine at a time; RequestFull and Close may be called
// from any.
type Capturer struct {
	d        *Desktop
	windowID uint32
	full     chan struct{} // RequestFull's signal; one pending is enough
	done     chan struct{} // closed by Close: ends a waiting Next
	stop     sync.Once

	// mu is held by Next and Close; a semaphore so that a Next behind
	// another gives up with its own context.
	mu    semaphore
	x     *xconn         // the connection track and frame belong to
	track *damageTracker // nil without XDamage, or before the first frame
	frame Frame          // the last frame; its Pix is the kept buffer
	valid bool           // frame holds the whole current image
	moved bool           // frame was read from the screen: a move changes it
}

// ErrCapturerClosed is Next's answer after Close.
var ErrCapturerClosed = api.Errorf(api.KindCancelled, "capture: the capturer was closed")

// NewCapturer returns a Capturer of the screen (windowID 0) or of one
// window. It connects on the first Next.
func (d *Desktop) NewCapturer(windowID uint32) *Capturer {
	return &Capturer{d: d, windowID: windowID, full: make(chan struct{}, 1), done: make(chan struct{}), mu: newSemaphore()}
}

// RequestFull makes the next frame whole, at once: the keyframe a new
// viewer or a lost packet needs.
func (c *Capturer) RequestFull() {
	select {
	case c.full <- struct{}{}:
	default:
	}
}

// Close ends a waiting Next and stops the damage tracking. The last
// frame's pixels must not be used after it.
func (c *Capturer) Close() {
	c.stop.Do(func() { close(c.done) })
	_ = c.mu.acquire(context.Background())
	defer c.mu.release()
	c.reset()
	c.frame = Frame{}
}

// reset forgets the tracking; the next frame is whole.
func (c *Capturer) reset() {
	if c.track != nil {
		c.track.close()
		c.track = nil
	}
	c.valid = false
}

// Next returns the next frame: the first at once and whole, each later one
// when something of the target was drawn (or RequestFull was called),
// with the changed rectangles read and listed in Damage. Without XDamage
// it does not wait: every frame is whole, and the caller paces itself.
//
// The frame's Pix is the Capturer's buffer: it is valid until the next
// call of Next or Close, which write into it. After an error the next
// frame is whole.
func (c *Capturer) Next(ctx context.Context) (Frame, error) {
	if c.mu.acquire(ctx) != nil {
		kind := api.KindCancelled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			kind = api.KindTimeout
		}
		return Frame{}, api.Errorf(kind, "capture: waiting for another Next: %w", ctx.Err())
	}
	defer c.mu.release()
	for {
		select {
		case <-c.done:
			return Frame{}, ErrCapturerClosed
		default:
		}
		x, err := c.d.use(ctx, api.FeatureScreenshot)
		if err != nil {
			return Frame{}, err
		}
		if x != c.x { // the first frame, or the last connection died
			c.reset()
			c.x = x
		}
		f, err := c.next(ctx, x)
		if errors.Is(err, errConnEnded) {
			continue // reconnect; that frame is whole
		}
		return f, err
	}
}

// errConnEnded says the connection ended while Next waited.
var errConnEnded = errors.New("the X connection ended")

// next waits for the next change and reads it. An error while waiting
// leaves everything as it was (a caller may poll with short deadlines);
// one after the damage was taken makes the next frame whole.
func (c *Capturer) next(ctx context.Context, x *xconn) (Frame, error) {
	full := !c.valid
	if c.track == nil && x.hasDamage {
		if c.windowID != 0 {
			// A window that is not there is not_found, not a failed
			// damage request.
			if _, err := x.window(ctx, c.windowID); err != nil {
				return Frame{}, err
			}
		}
		// Tracking starts before the whole frame is read, so that nothing
		// drawn after the read is missed (what is drawn in between is
		// both read and reported once more).
		t, err := x.trackDamage(ctx, x.damageDrawable(c.windowID))
		if err != nil {
			return Frame{}, err
		}
		c.track, full = t, true
	}
	for {
		if !full {
			if c.track == nil {
				full = true // damage unknown
			} else if err := c.wait(ctx, x, &full); err != nil {
				return Frame{}, err
			}
		}
		if full {
			c.drainFull()
		}
		f, ok, err := c.takeAndRead(ctx, x, full)
		if err != nil {
			// The damage taken is lost, and an abandoned read may still
			// write into the buffer: start over with a new one.
			c.reset()
			c.frame.Pix = nil
			return Frame{}, err
		}
		if ok {
			return f, nil
		}
		// What was drawn lies outside the target: wait on.
	}
}

// takeAndRead takes the damage and reads the frame.
func (c *Capturer) takeAndRead(ctx context.Context, x *xconn, full bool) (Frame, bool, error) {
	var rects []image.Rectangle
	if c.track != nil {
		// A wake-up pending now is for damage this take hands over.
		select {
		case <-c.track.notify:
		default:
		}
		var err error
		if rects, err = c.track.take(ctx); err != nil {
			if c.windowID != 0 && x.brokenErr() == nil && ctx.Err() == nil {
				// The server frees a window's damage with the window.
				if _, werr := x.window(ctx, c.windowID); werr != nil {
					return Frame{}, false, werr
				}
			}
			return Frame{}, false, err
		}
	}
	src, err := x.resolve(ctx, c.windowID, true)
	if err != nil {
		return Frame{}, false, err
	}
	defer x.release(ctx, src)
	return c.read(ctx, x, &src, rects, full)
}

// wait waits for damage, a full request, or the end of the connection.
func (c *Capturer) wait(ctx context.Context, x *xconn, full *bool) error {
	select {
	case <-c.full:
		*full = true
	case <-c.track.notify:
	case <-c.done:
		return ErrCapturerClosed
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return api.Errorf(api.KindTimeout, "X display %s: nothing was drawn on the capture target before the deadline: %w", x.display, ctx.Err())
		}
		return api.Errorf(api.KindCancelled, "X display %s: waiting for the capture target to change: %w", x.display, ctx.Err())
	case <-x.broken:
		return x.brokenErr()
	case <-x.dead:
		return errConnEnded
	}
	return nil
}

func (c *Capturer) drainFull() {
	select {
	case <-c.full:
	default:
	}
}

// read reads the frame of src: whole when full or when the target changed
// size or place, else the damage rects (in the tracked drawable's
// coordinates). ok is false when no damage falls on the target.
func (c *Capturer) read(ctx context.Context, x *xconn, src *source, rects []image.Rectangle, full bool) (Frame, bool, error) {
	f := &c.frame
	if f.Width != src.size.X || f.Height != src.size.Y ||
		(c.moved || !src.composited) && f.Bounds != src.bounds ||
		c.track != nil && c.track.on != src.damageOn { // read elsewhere than tracked (Composite failed)
		full = true
	}
	var damage []image.Rectangle
	if !full {
		for _, r := range rects {
			r = r.Sub(src.damageShift).Intersect(src.readable)
			if !r.Empty() {
				damage = append(damage, r)
			}
		}
		if len(damage) == 0 {
			return Frame{}, false, nil
		}
	}
	n := src.size.X * src.size.Y * 4
	if cap(f.Pix) < n {
		f.Pix = make([]byte, n)
	}
	f.Pix = f.Pix[:n]
	f.Stride, f.Width, f.Height, f.Bounds = src.size.X*4, src.size.X, src.size.Y, src.bounds
	c.moved = !src.composited
	px := pixels{pix: f.Pix, stride: f.Stride}
	c.valid = false
	var err error
	if full {
		f.Damage, f.Full = nil, true
		err = x.readWhole(ctx, src, px)
	} else {
		f.Damage, f.Full = damage, false
		err = x.read(ctx, src, damage, px)
	}
	if err != nil {
		return Frame{}, false, err
	}
	c.valid = true
	return *f, true, nil
}
