package desktop

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"sync"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/jpegenc"
	"github.com/trycua/cua-spacesd/media/scale"
)

const (
	// DefaultJPEGQuality is the quality of a JPEG screenshot unless asked.
	DefaultJPEGQuality = 80
	// MaxDimensionLimit bounds max_dimension (and so the work of a scale);
	// reported as limits.max_screenshot_dimension.
	MaxDimensionLimit = api.MaxScreenshotDimension
	// MaxCapturePixels caps the area one capture reads: 8192x8192 (64 Mpx,
	// 256 MiB of RGBA), well above an 8K screen (33 Mpx). Any client can
	// resize its window to 32767x32767, whose capture would allocate 4 GiB
	// and take the daemon down; the check comes before any allocation.
	MaxCapturePixels = 8192 * 8192
)

// Screenshot captures the screen or one window and encodes it. The
// capture lands as the X server holds it (BGRX) in a pooled buffer; an
// unscaled JPEG is encoded from there, a scaled one from the area average
// of it (media/scale, BGRX again), a scaled PNG from the area average
// written as RGBA in the same pass. Only an unscaled PNG is converted to
// RGBA while copied out of the capture, for image/png.
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
	x, err := d.use(ctx, api.FeatureScreenshot)
	if err != nil {
		return nil, info, err
	}
	var pooled *[]byte
	px, src, err := x.captureWhole(ctx, req.WindowID, func(w, h int) pixels {
		pooled = d.frames.captures.get(w * h * 4)
		rgba := req.Format == api.FormatPNG && scale.Fit(w, h, req.MaxDimension).IsOne()
		return pixels{pix: *pooled, stride: w * 4, rgba: rgba}
	})
	if err != nil {
		return nil, info, err // a pooled buffer stays out: an abandoned read may still fill it
	}
	defer d.frames.captures.put(pooled)
	return d.frames.encode(px, src, req)
}

// Capture grabs the screen (windowID 0) or one window's own content as RGBA
// together with the captured area in screen pixels.
func (d *Desktop) Capture(ctx context.Context, windowID uint32) (*image.RGBA, api.Rect, error) {
	x, err := d.use(ctx, api.FeatureScreenshot)
	if err != nil {
		return nil, api.Rect{}, err
	}
	var img *image.RGBA
	_, src, err := x.captureWhole(ctx, windowID, func(w, h int) pixels {
		img = image.NewRGBA(image.Rect(0, 0, w, h))
		return pixels{pix: img.Pix, stride: img.Stride, rgba: true}
	})
	if err != nil {
		return nil, api.Rect{}, err
	}
	return img, src.bounds, nil
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

// encode scales a whole capture as req asks and encodes it: BGRX goes to
// the JPEG encoder as it is, RGBA to image/png.
func (b *bufferPool) encode(px pixels, src source, req api.ScreenshotRequest) ([]byte, api.ScreenshotInfo, error) {
	r := scale.Fit(src.size.X, src.size.Y, req.MaxDimension)
	w, h := r.Size(src.size.X, src.size.Y)
	// The scale answered is the ratio the pixels were made with, exactly:
	// image pixel (x, y) covers screen pixels [x/Scale, (x+1)/Scale).
	info := api.ScreenshotInfo{
		Width: w, Height: h, Scale: r.Float(),
		Format: req.Format, Bounds: src.bounds, WindowID: req.WindowID,
	}
	if !r.IsOne() {
		to := scale.BGRX
		if req.Format == api.FormatPNG {
			to = scale.RGBA
		}
		out := b.scaled.get(w * h * 4)
		defer b.scaled.put(out)
		dst := scale.Frame{Pix: *out, Stride: w * 4, Width: w, Height: h}
		if err := b.scaler.Scale(dst, to, scale.Frame{Pix: px.pix, Stride: px.stride, Width: src.size.X, Height: src.size.Y}, r); err != nil {
			return nil, info, api.Errorf(api.KindEnv, "scale the %dx%d capture to %dx%d: %w", src.size.X, src.size.Y, w, h, err)
		}
		px = pixels{pix: dst.Pix, stride: dst.Stride, rgba: to == scale.RGBA}
	}
	if req.Format == api.FormatJPEG { // always BGRX: only PNG is captured or scaled to RGBA
		img, err := jpegEncoder.Append(nil, jpegenc.Image{
			Pix: px.pix, Stride: px.stride, Width: w, Height: h, Format: jpegenc.BGRX,
		}, jpegenc.Options{Quality: req.Quality})
		if err != nil {
			return nil, info, api.Errorf(api.KindEnv, "encode %s screenshot: %w", req.Format, err)
		}
		return img, info, nil
	}
	var buf bytes.Buffer
	buf.Grow(w * h)
	if err := pngEncoder.Encode(&buf, &image.RGBA{Pix: px.pix, Stride: px.stride, Rect: image.Rect(0, 0, w, h)}); err != nil {
		return nil, info, api.Errorf(api.KindEnv, "encode %s screenshot: %w", req.Format, err)
	}
	return buf.Bytes(), info, nil
}
