package desktop

import (
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"runtime"
	"sync"

	"github.com/jezek/xgb/composite"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/scale"
)

// The capture seam: every capture (a screenshot, Capture, a Capturer's
// frames) resolves its target to a source, then reads rectangles of it
// straight from the X server, through MIT-SHM when it can, into a buffer
// of the caller's choosing: BGRX as the server holds it, or converted to
// RGBA row by row on the way out of the shared memory (for image/png and
// the scaler of a scaled screenshot).

// source is where the pixels of a capture target are read from now.
type source struct {
	drawable xproto.Drawable // the root, or a window's Composite pixmap
	origin   image.Point     // the frame's (0, 0) in the drawable
	size     image.Point     // the frame's width and height
	bounds   api.Rect        // the captured area in screen pixels
	// readable are the frame pixels the drawable holds; the rest (a
	// window hanging off the screen, without Composite) is black.
	readable image.Rectangle
	// damageOn is the drawable whose damage is the frame's; damage
	// coordinates minus damageShift are frame coordinates.
	damageOn    xproto.Drawable
	damageShift image.Point
	composited  bool
	pixmap      xproto.Pixmap // named for this capture, freed by release; 0 if none
}

func (s *source) frameRect() image.Rectangle { return image.Rectangle{Max: s.size} }

// damageDrawable is where a target's damage is tracked: the root for the
// screen and for a window read from the screen, the window itself when its
// content comes from its Composite pixmap (it is drawn there even where
// other windows cover it).
func (x *xconn) damageDrawable(windowID uint32) xproto.Drawable {
	if windowID != 0 && x.hasComposite {
		return xproto.Drawable(windowID)
	}
	return xproto.Drawable(x.root)
}

// resolve finds where the target's pixels are now: the screen (windowID
// 0) or one window, through its Composite pixmap when viaComposite and the
// display has Composite, else from the screen. It checks the target's size
// against MaxCapturePixels before anything is allocated.
func (x *xconn) resolve(ctx context.Context, windowID uint32, viaComposite bool) (source, error) {
	if windowID == 0 {
		sw, sh, err := x.screenSize(ctx)
		if err != nil {
			return source{}, err
		}
		r := api.Rect{Width: sw, Height: sh}
		if err := checkCaptureSize("the screen", r); err != nil {
			return source{}, err
		}
		size := image.Pt(sw, sh)
		return source{drawable: xproto.Drawable(x.root), size: size, bounds: r,
			readable: image.Rectangle{Max: size}, damageOn: xproto.Drawable(x.root)}, nil
	}
	win, err := x.window(ctx, windowID)
	if err != nil {
		return source{}, err
	}
	if !win.OnScreen {
		return source{}, api.Errorf(api.KindInvalidArgument, "window %d is not shown (minimized or unmapped); activate it first", windowID)
	}
	if err := checkCaptureSize(fmt.Sprintf("window %d", windowID), win.Bounds); err != nil {
		return source{}, err
	}
	size := image.Pt(win.Bounds.Width, win.Bounds.Height)
	if viaComposite && x.hasComposite {
		pix, off, err := x.nameWindowPixmap(ctx, xproto.Window(windowID))
		if err == nil {
			return source{drawable: xproto.Drawable(pix), origin: off, size: size, bounds: win.Bounds,
				readable: image.Rectangle{Max: size}, damageOn: xproto.Drawable(windowID), composited: true, pixmap: pix}, nil
		}
		if x.brokenErr() != nil || ctx.Err() != nil {
			return source{}, err
		}
		x.log.Debug("composite capture failed; capturing the screen area", "window", windowID, "err", err)
	}
	// Without Composite only what the screen shows can be captured: the
	// window's area, clipped to the screen, covered parts included. The
	// frame still spans the whole window, off-screen parts black, so that
	// its pixel (x, y) is the window's point (x, y) as with Composite:
	// input given with the window id maps from the window's origin.
	sw, sh, err := x.screenSize(ctx)
	if err != nil {
		return source{}, err
	}
	on := clip(win.Bounds, sw, sh)
	if on.Width == 0 || on.Height == 0 {
		return source{}, api.Errorf(api.KindInvalidArgument, "window %d lies outside the screen", windowID)
	}
	origin := image.Pt(win.Bounds.X, win.Bounds.Y)
	return source{drawable: xproto.Drawable(x.root), origin: origin, size: size, bounds: win.Bounds,
		readable: image.Rect(on.X, on.Y, on.X+on.Width, on.Y+on.Height).Sub(origin),
		damageOn: xproto.Drawable(x.root), damageShift: origin}, nil
}

// nameWindowPixmap names the Composite pixmap of w's top-level frame,
// which holds w's content even where other windows cover it, and returns
// it with w's offset in it.
func (x *xconn) nameWindowPixmap(ctx context.Context, w xproto.Window) (xproto.Pixmap, image.Point, error) {
	frame, err := x.topLevel(ctx, w)
	if err != nil {
		return 0, image.Point{}, err
	}
	off, err := await(ctx, x, "window offset in its frame", func() (*xproto.TranslateCoordinatesReply, error) {
		return xproto.TranslateCoordinates(x.c, w, frame, 0, 0).Reply()
	})
	if err != nil {
		return 0, image.Point{}, err
	}
	var pix xproto.Pixmap
	err = x.do(ctx, "name the window's pixmap", func() error {
		pid, err := x.c.NewId()
		if err != nil {
			return xerr("new pixmap id", err)
		}
		pix = xproto.Pixmap(pid)
		return xerr("name the window's pixmap", composite.NameWindowPixmapChecked(x.c, frame, pix).Check())
	})
	if err != nil {
		return 0, image.Point{}, err
	}
	return pix, image.Pt(int(off.DstX), int(off.DstY)), nil
}

// release frees what resolve named. An abandoned read may still read the
// pixmap; the server frees it after that read, as requests are processed
// in order.
func (x *xconn) release(ctx context.Context, s source) {
	if s.pixmap == 0 {
		return
	}
	_ = x.do(context.WithoutCancel(ctx), "free the pixmap", func() error { xproto.FreePixmap(x.c, s.pixmap); return nil })
}

// topLevel is w's ancestor that is a child of the root (the WM's frame).
func (x *xconn) topLevel(ctx context.Context, w xproto.Window) (xproto.Window, error) {
	for {
		t, err := await(ctx, x, "query window tree", func() (*xproto.QueryTreeReply, error) {
			return xproto.QueryTree(x.c, w).Reply()
		})
		if err != nil {
			return 0, err
		}
		if t.Parent == x.root || t.Parent == 0 {
			return w, nil
		}
		w = t.Parent
	}
}

// pixels is a capture's destination: row y of the frame starts at
// pix[y*stride]; rgba converts the server's BGRX to opaque RGBA.
type pixels struct {
	pix    []byte
	stride int
	rgba   bool
}

// captureWhole captures the whole target once into the buffer alloc
// gives for its size. A window whose Composite pixmap cannot be read is
// captured from the screen instead.
func (x *xconn) captureWhole(ctx context.Context, windowID uint32, alloc func(w, h int) pixels) (pixels, source, error) {
	src, err := x.resolve(ctx, windowID, true)
	if err != nil {
		return pixels{}, source{}, err
	}
	px := alloc(src.size.X, src.size.Y)
	err = x.readWhole(ctx, &src, px)
	x.release(ctx, src)
	if err != nil && src.composited && x.brokenErr() == nil && ctx.Err() == nil {
		x.log.Debug("composite capture failed; capturing the screen area", "window", windowID, "err", err)
		size := src.size
		if src, err = x.resolve(ctx, windowID, false); err != nil {
			return pixels{}, source{}, err
		}
		if src.size != size {
			px = alloc(src.size.X, src.size.Y) // resized in between
		}
		err = x.readWhole(ctx, &src, px)
	}
	return px, src, err
}

// readWhole reads every pixel of src's frame into px, black where the
// drawable holds none.
func (x *xconn) readWhole(ctx context.Context, src *source, px pixels) error {
	if src.readable != src.frameRect() {
		black(px, src.size)
	}
	return x.read(ctx, src, []image.Rectangle{src.readable}, px)
}

// black paints the frame of size in px black (opaque for RGBA).
func black(px pixels, size image.Point) {
	for y := range size.Y {
		row := px.pix[y*px.stride:][:size.X*4]
		clear(row)
		if px.rgba {
			for i := 3; i < len(row); i += 4 {
				row[i] = 0xff
			}
		}
	}
}

// strip is a rectangle of frame pixels read in one request.
type strip = image.Rectangle

// read reads the frame rectangles rects (clipped to src.readable) of src
// into px, in batches that each fit the shared memory segment (or, without
// it, a bounded GetImage reply), one round trip per batch.
func (x *xconn) read(ctx context.Context, src *source, rects []image.Rectangle, px pixels) error {
	limit, useShm := maxGetImageBytes, false
	if s := x.shm; s != nil && s.size() >= src.size.X*4 {
		limit, useShm = s.size(), true
	}
	var batch []strip
	bytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var err error
		if useShm {
			err = x.shm.read(ctx, x, src, batch, px)
		} else {
			err = x.getImages(ctx, src, batch, px)
		}
		batch, bytes = batch[:0], 0
		return err
	}
	for _, r := range rects {
		r = r.Intersect(src.readable)
		rowBytes := r.Dx() * 4
		for r.Dy() > 0 {
			rows := min(r.Dy(), max(1, (limit-bytes)/rowBytes))
			if bytes > 0 && rows*rowBytes > limit-bytes {
				if err := flush(); err != nil {
					return err
				}
				continue
			}
			batch = append(batch, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+rows))
			bytes += rows * rowBytes
			r.Min.Y += rows
		}
	}
	return flush()
}

// maxGetImageBytes bounds the replies of one batch of core GetImage: one
// reply of a whole 4K screen would be 32 MiB through the socket, and a
// request is limited in size anyway.
const maxGetImageBytes = 4 << 20

// getImages reads a batch of strips through core GetImage.
func (x *xconn) getImages(ctx context.Context, src *source, batch []strip, px pixels) error {
	return x.do(ctx, "capture (GetImage)", func() error {
		cookies := make([]xproto.GetImageCookie, len(batch))
		for i, r := range batch {
			p := r.Min.Add(src.origin)
			cookies[i] = xproto.GetImage(x.c, xproto.ImageFormatZPixmap, src.drawable, int16(p.X), int16(p.Y), uint16(r.Dx()), uint16(r.Dy()), ^uint32(0))
		}
		for i, r := range batch {
			rep, err := cookies[i].Reply()
			if err != nil {
				return xerr("capture (GetImage)", err)
			}
			n := r.Dx() * r.Dy() * 4
			if len(rep.Data) < n {
				return errNot32Bit(rep.Depth)
			}
			put(px, r, rep.Data[:n])
		}
		return nil
	})
}

func errNot32Bit(depth byte) error {
	return api.Errorf(api.KindEnv, "capture: the display's depth %d is not a 32-bit pixel format", depth)
}

// minParallelPixels is the strip size from which the pixel conversion is
// split across cores; below it a goroutine costs more than it saves.
const minParallelPixels = 256 * 1024

// put stores the packed rows of strip r, as the server sent them, at r in
// px: a copy for BGRX, a conversion for RGBA (split across the cores for
// big strips).
func put(px pixels, r strip, src []byte) {
	rowBytes := r.Dx() * 4
	rows := func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			d := px.pix[(r.Min.Y+y)*px.stride+r.Min.X*4:][:rowBytes]
			s := src[y*rowBytes:][:rowBytes]
			if px.rgba {
				convertBGRX(d, s)
			} else {
				copy(d, s)
			}
		}
	}
	parts := 1
	if px.rgba && r.Dx()*r.Dy() >= minParallelPixels {
		parts = min(runtime.GOMAXPROCS(0), r.Dy())
	}
	if parts == 1 {
		rows(0, r.Dy())
		return
	}
	var wg sync.WaitGroup
	per := (r.Dy() + parts - 1) / parts
	for y := 0; y < r.Dy(); y += per {
		wg.Add(1)
		go func(y0, y1 int) {
			defer wg.Done()
			rows(y0, y1)
		}(y, min(y+per, r.Dy()))
	}
	wg.Wait()
}

// convertBGRX converts the X server's little-endian BGRX pixels to opaque
// RGBA.
func convertBGRX(dst, src []byte) {
	dst = dst[:len(src)]
	for i := 0; i+4 <= len(src); i += 4 {
		v := binary.LittleEndian.Uint32(src[i:])
		binary.LittleEndian.PutUint32(dst[i:], v>>16&0xff|v&0xff00|(v&0xff)<<16|0xff000000)
	}
}

// checkCaptureSize refuses an area over MaxCapturePixels.
func checkCaptureSize(what string, r api.Rect) error {
	if int64(r.Width)*int64(r.Height) <= MaxCapturePixels {
		return nil
	}
	// Not retryable: the same call fails the same way until the area shrinks.
	return api.Errorf(api.KindLimitExceeded, "%s is %dx%d (%d pixels), over the capture cap of %d pixels (8192x8192); shrink it (POST /v1/windows/{id}/geometry) or capture the screen",
		what, r.Width, r.Height, int64(r.Width)*int64(r.Height), MaxCapturePixels).WithRetryable(false)
}

func clip(r api.Rect, w, h int) api.Rect {
	x0, y0 := max(r.X, 0), max(r.Y, 0)
	x1, y1 := min(r.X+r.Width, w), min(r.Y+r.Height, h)
	if x1 <= x0 || y1 <= y0 {
		return api.Rect{}
	}
	return api.Rect{X: x0, Y: y0, Width: x1 - x0, Height: y1 - y0}
}

// bufferPool keeps the working memory of one-shot screenshots between
// calls, so that an agent's stream of them allocates no frame's worth of
// pixels each time: captures and scaled images in pools of their own (a
// pool hands back any of its buffers, and one too small is dropped), and
// the scaler's rows.
type bufferPool struct {
	captures, scaled pool
	scaler           scale.Scaler
}

// pool keeps pixel buffers of about one size.
type pool struct{ p sync.Pool }

func (b *pool) get(n int) *[]byte {
	if v, ok := b.p.Get().(*[]byte); ok && cap(*v) >= n {
		*v = (*v)[:n]
		return v
	}
	s := make([]byte, n)
	return &s
}

// put keeps v for a later capture. Only a buffer whose read completed may
// come back: an abandoned read can still write into it.
func (b *pool) put(v *[]byte) { b.p.Put(v) }
