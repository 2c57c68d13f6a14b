package desktop

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"math"
	"runtime"
	"sync"

	"github.com/jezek/xgb/composite"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/image/draw"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/jpegenc"
)

const (
	// DefaultJPEGQuality is the quality of a JPEG screenshot unless asked.
	DefaultJPEGQuality = 80
	// MaxDimensionLimit bounds max_dimension (and so the work of a scale);
	// reported as limits.max_screenshot_dimension.
	MaxDimensionLimit = 16384
	// MaxCapturePixels caps the area one capture reads: 8192x8192 (64 Mpx,
	// 256 MiB of RGBA), well above an 8K screen (33 Mpx). Any client can
	// resize its window to 32767x32767, whose capture would allocate 4 GiB
	// and take the daemon down; the check comes before any allocation.
	MaxCapturePixels = 8192 * 8192
	// minParallelPixels is the image size from which the pixel conversion
	// is split across cores; below it a goroutine costs more than it saves.
	minParallelPixels = 256 * 1024
)

// Screenshot captures the screen or one window and encodes it.
func (d *Desktop) Screenshot(ctx context.Context, req api.ScreenshotRequest) ([]byte, api.ScreenshotInfo, error) {
	var info api.ScreenshotInfo
	switch req.Format {
	case "":
		req.Format = api.FormatPNG
	case "jpg":
		req.Format = api.FormatJPEG
	case api.FormatPNG, api.FormatJPEG:
	default:
		return nil, info, api.Errorf(api.KindInvalidArgument, "format %q: want png or jpeg", req.Format)
	}
	if req.Quality == 0 {
		req.Quality = DefaultJPEGQuality
	}
	if req.Quality < 1 || req.Quality > 100 {
		return nil, info, api.Errorf(api.KindInvalidArgument, "quality %d is out of range 1-100", req.Quality)
	}
	if req.MaxDimension < 0 || req.MaxDimension > MaxDimensionLimit {
		return nil, info, api.Errorf(api.KindInvalidArgument, "max_dimension %d is out of range 0-%d", req.MaxDimension, MaxDimensionLimit)
	}
	img, bounds, err := d.Capture(ctx, req.WindowID)
	if err != nil {
		return nil, info, err
	}
	return encode(img, bounds, req)
}

// Capture grabs the screen (windowID 0) or one window's own content as RGBA
// together with the captured area in screen pixels.
func (d *Desktop) Capture(ctx context.Context, windowID uint32) (*image.RGBA, api.Rect, error) {
	x, err := d.use(ctx, api.FeatureScreenshot)
	if err != nil {
		return nil, api.Rect{}, err
	}
	sw, sh, err := x.screenSize(ctx)
	if err != nil {
		return nil, api.Rect{}, err
	}
	if windowID == 0 {
		r := api.Rect{Width: sw, Height: sh}
		if err := checkCaptureSize("the screen", r); err != nil {
			return nil, api.Rect{}, err
		}
		img, err := x.grab(ctx, xproto.Drawable(x.root), 0, 0, r.Width, r.Height)
		return img, r, err
	}
	win, err := x.window(ctx, windowID)
	if err != nil {
		return nil, api.Rect{}, err
	}
	if !win.OnScreen {
		return nil, api.Rect{}, api.Errorf(api.KindInvalidArgument, "window %d is not shown (minimized or unmapped); activate it first", windowID)
	}
	// Both paths below allocate the window's whole area.
	if err := checkCaptureSize(fmt.Sprintf("window %d", windowID), win.Bounds); err != nil {
		return nil, api.Rect{}, err
	}
	if x.hasComposite {
		img, err := x.grabComposited(ctx, xproto.Window(windowID), win.Bounds)
		if err == nil {
			return img, win.Bounds, nil
		}
		if x.brokenErr() != nil || ctx.Err() != nil {
			return nil, api.Rect{}, err
		}
		x.log.Debug("composite capture failed; capturing the screen area", "window", windowID, "err", err)
	}
	// Without Composite only what the screen shows can be captured: the
	// window's area, clipped to the screen, covered parts included.
	r := clip(win.Bounds, sw, sh)
	if r.Width == 0 || r.Height == 0 {
		return nil, api.Rect{}, api.Errorf(api.KindInvalidArgument, "window %d lies outside the screen", windowID)
	}
	img, err := x.grab(ctx, xproto.Drawable(x.root), r.X, r.Y, r.Width, r.Height)
	if err != nil || r == win.Bounds {
		return img, win.Bounds, err
	}
	// The image still spans the whole window, off-screen parts black, so
	// that its pixel (x, y) is the window's point (x, y) as with Composite:
	// input given with the window id maps from the window's origin.
	full := image.NewRGBA(image.Rect(0, 0, win.Bounds.Width, win.Bounds.Height))
	draw.Draw(full, full.Bounds(), image.Black, image.Point{}, draw.Src)
	at := image.Pt(r.X-win.Bounds.X, r.Y-win.Bounds.Y)
	draw.Draw(full, img.Bounds().Add(at), img, image.Point{}, draw.Src)
	return full, win.Bounds, nil
}

// checkCaptureSize refuses an area over MaxCapturePixels.
func checkCaptureSize(what string, r api.Rect) error {
	if int64(r.Width)*int64(r.Height) <= MaxCapturePixels {
		return nil
	}
	return api.Errorf(api.KindLimitExceeded, "%s is %dx%d (%d pixels), over the capture cap of %d pixels (8192x8192); shrink it (POST /v1/windows/{id}/geometry) or capture the screen",
		what, r.Width, r.Height, int64(r.Width)*int64(r.Height), MaxCapturePixels)
}

// grabComposited reads the window's content from its top-level frame's
// Composite pixmap, which holds it even where other windows cover it.
func (x *xconn) grabComposited(ctx context.Context, w xproto.Window, b api.Rect) (*image.RGBA, error) {
	frame, err := x.topLevel(ctx, w)
	if err != nil {
		return nil, err
	}
	off, err := await(ctx, x, "window offset in its frame", func() (*xproto.TranslateCoordinatesReply, error) {
		return xproto.TranslateCoordinates(x.c, w, frame, 0, 0).Reply()
	})
	if err != nil {
		return nil, err
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
		return nil, err
	}
	// An abandoned grab may still read the pixmap; the server frees it
	// after that read, as requests are processed in order.
	defer func() {
		_ = x.do(context.WithoutCancel(ctx), "free the pixmap", func() error { xproto.FreePixmap(x.c, pix); return nil })
	}()
	return x.grab(ctx, xproto.Drawable(pix), int(off.DstX), int(off.DstY), b.Width, b.Height)
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

// grab reads a rectangle of a drawable, through shared memory when it fits.
func (x *xconn) grab(ctx context.Context, d xproto.Drawable, sx, sy, w, h int) (*image.RGBA, error) {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	if s := x.shm; s != nil {
		if ok, err := s.capture(ctx, x, d, sx, sy, w, h, img.Pix); ok {
			if err != nil {
				return nil, err
			}
			return img, nil
		}
	}
	// Core GetImage in strips: one reply of a whole 4K screen would be
	// 32 MiB through the socket, and a request is limited in size anyway.
	rowBytes := w * 4
	rows := max(1, maxGetImageBytes/rowBytes)
	for y := 0; y < h; y += rows {
		sh := min(rows, h-y)
		r, err := await(ctx, x, "capture (GetImage)", func() (*xproto.GetImageReply, error) {
			return xproto.GetImage(x.c, xproto.ImageFormatZPixmap, d, int16(sx), int16(sy+y), uint16(w), uint16(sh), ^uint32(0)).Reply()
		})
		if err != nil {
			return nil, err
		}
		if len(r.Data) < sh*rowBytes {
			return nil, api.Errorf(api.KindEnv, "capture: the display's depth %d is not a 32-bit pixel format", r.Depth)
		}
		bgrxToRGBA(img.Pix[y*rowBytes:(y+sh)*rowBytes], r.Data[:sh*rowBytes])
	}
	return img, nil
}

// maxGetImageBytes bounds one core GetImage reply.
const maxGetImageBytes = 4 << 20

// bgrxToRGBA converts the X server's little-endian BGRX pixels to opaque
// RGBA, split across the cores for big images.
func bgrxToRGBA(dst, src []byte) {
	n := len(src) / 4
	parts := 1
	if n >= minParallelPixels {
		parts = runtime.GOMAXPROCS(0)
	}
	if parts == 1 {
		convertBGRX(dst, src)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + parts - 1) / parts * 4
	for off := 0; off < len(src); off += chunk {
		end := min(off+chunk, len(src))
		wg.Add(1)
		go func(d, s []byte) {
			defer wg.Done()
			convertBGRX(d, s)
		}(dst[off:end], src[off:end])
	}
	wg.Wait()
}

func convertBGRX(dst, src []byte) {
	dst = dst[:len(src)]
	for i := 0; i+4 <= len(src); i += 4 {
		v := binary.LittleEndian.Uint32(src[i:])
		binary.LittleEndian.PutUint32(dst[i:], v>>16&0xff|v&0xff00|(v&0xff)<<16|0xff000000)
	}
}

func clip(r api.Rect, w, h int) api.Rect {
	x0, y0 := max(r.X, 0), max(r.Y, 0)
	x1, y1 := min(r.X+r.Width, w), min(r.Y+r.Height, h)
	if x1 <= x0 || y1 <= y0 {
		return api.Rect{}
	}
	return api.Rect{X: x0, Y: y0, Width: x1 - x0, Height: y1 - y0}
}

// pngEncoder favours speed: a screenshot is read once, soon.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &pngPool{}}

type pngPool struct{ p sync.Pool }

func (p *pngPool) Get() *png.EncoderBuffer {
	b, _ := p.p.Get().(*png.EncoderBuffer)
	return b
}
func (p *pngPool) Put(b *png.EncoderBuffer) { p.p.Put(b) }

// jpegEncoder codes JPEG screenshots in parallel bands and keeps its band
// buffers between screenshots (image/jpeg took ~50 ms for 1080p on 2 cores).
var jpegEncoder jpegenc.Encoder

// Scaled returns img scaled down so that neither side exceeds maxDim, and
// the scale (image pixels per source pixel).
func Scaled(img *image.RGBA, maxDim int) (*image.RGBA, float64) {
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	if maxDim <= 0 || (w <= maxDim && h <= maxDim) {
		return img, 1
	}
	s := float64(maxDim) / float64(max(w, h))
	nw := max(1, int(math.Round(float64(w)*s)))
	nh := max(1, int(math.Round(float64(h)*s)))
	dst := image.NewRGBA(image.Rect(0, 0, nw, nh))
	// BiLinear (not ApproxBiLinear) widens its kernel when shrinking, so
	// text and thin lines average instead of aliasing away.
	draw.BiLinear.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	return dst, s
}

func encode(img *image.RGBA, bounds api.Rect, req api.ScreenshotRequest) ([]byte, api.ScreenshotInfo, error) {
	out, scale := Scaled(img, req.MaxDimension)
	info := api.ScreenshotInfo{
		Width: out.Bounds().Dx(), Height: out.Bounds().Dy(), Scale: scale,
		Format: req.Format, Bounds: bounds, WindowID: req.WindowID,
	}
	if req.Format == api.FormatJPEG {
		b, err := jpegEncoder.Append(nil, jpegenc.Image{
			Pix: out.Pix, Stride: out.Stride, Width: info.Width, Height: info.Height, Format: jpegenc.RGBA,
		}, jpegenc.Options{Quality: req.Quality})
		if err != nil {
			return nil, info, api.Errorf(api.KindEnv, "encode %s screenshot: %w", req.Format, err)
		}
		return b, info, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(out.Pix) / 4)
	if err := pngEncoder.Encode(&buf, out); err != nil {
		return nil, info, api.Errorf(api.KindEnv, "encode %s screenshot: %w", req.Format, err)
	}
	return buf.Bytes(), info, nil
}
