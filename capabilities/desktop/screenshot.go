package desktop

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"math"
	"sync"

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
)

// Screenshot captures the screen or one window and encodes it. An
// unscaled JPEG is encoded from the X server's BGRX as captured; a PNG,
// and a screenshot scaled down by max_dimension, are converted to RGBA
// while copied out of the capture (image/png and x/image/draw read RGBA).
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
		if req.Format == api.FormatJPEG && !scalesDown(w, h, req.MaxDimension) {
			pooled = d.frames.get(w * h * 4)
			return pixels{pix: *pooled, stride: w * 4}
		}
		return pixels{pix: make([]byte, w*h*4), stride: w * 4, rgba: true}
	})
	if err != nil {
		return nil, info, err // a pooled buffer stays out: an abandoned read may still fill it
	}
	if pooled != nil {
		defer d.frames.put(pooled)
	}
	return encode(px, src, req)
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

// scalesDown reports whether a w x h capture is scaled for maxDim.
func scalesDown(w, h, maxDim int) bool { return maxDim > 0 && (w > maxDim || h > maxDim) }

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

// encode encodes a whole capture: BGRX goes to the JPEG encoder as it is;
// RGBA is scaled when asked, then encoded.
func encode(px pixels, src source, req api.ScreenshotRequest) ([]byte, api.ScreenshotInfo, error) {
	info := api.ScreenshotInfo{
		Width: src.size.X, Height: src.size.Y, Scale: 1,
		Format: req.Format, Bounds: src.bounds, WindowID: req.WindowID,
	}
	if !px.rgba {
		b, err := jpegEncoder.Append(nil, jpegenc.Image{
			Pix: px.pix, Stride: px.stride, Width: info.Width, Height: info.Height, Format: jpegenc.BGRX,
		}, jpegenc.Options{Quality: req.Quality})
		if err != nil {
			return nil, info, api.Errorf(api.KindEnv, "encode %s screenshot: %w", req.Format, err)
		}
		return b, info, nil
	}
	out, scale := Scaled(&image.RGBA{Pix: px.pix, Stride: px.stride, Rect: image.Rectangle{Max: src.size}}, req.MaxDimension)
	info.Width, info.Height, info.Scale = out.Bounds().Dx(), out.Bounds().Dy(), scale
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
