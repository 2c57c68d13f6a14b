// Package selftest proves the VP8 encoder of this build where it runs, with
// no display: it paints synthetic frames, converts them as a stream does
// (yuv.Convert into the encoder's image), encodes them, decodes them again
// and compares each picture with what went in.
//
// Keyframes are decoded by golang.org/x/image/vp8, a decoder that shares no
// code with libvpx, so an encoder that writes a wrong bitstream (a broken
// cross build, a SIMD path wrong on this CPU) cannot pass by agreeing with
// itself. Interframes, which x/image/vp8 does not read, are decoded by
// libvpx's decoder in sequence.
package selftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"time"

	xvp8 "golang.org/x/image/vp8"

	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/yuv"
)

// The frames' size: odd on both sides, so that the chroma planes' rounding
// is part of the test, and small enough to encode in milliseconds even
// under an emulator (qemu-user checks the arm64 build on an x86 machine).
const (
	Width  = 321
	Height = 241
)

// MinPSNR is the lowest peak signal-to-noise ratio, in dB, a decoded plane
// may have against the encoder's input. At the default bitrate these
// frames decode at 47 dB or more (libvpx 1.12, amd64 and arm64); a wrong
// picture (the frame before, swapped chroma planes, rows shifted by one)
// falls below 25 (selftest_test.go).
const MinPSNR = 30

// PerfectPSNR is the PSNR reported for identical planes (infinite in
// theory; JSON has no infinity).
const PerfectPSNR = 100

// frameInterval is the frames' spacing on the stream's clock.
const frameInterval = 33 * time.Millisecond

// Decoder names as the report gives them.
const (
	DecoderXImage = "x/image/vp8"
	DecoderLibvpx = "libvpx"
)

// Check is one decoded frame compared with its source.
type Check struct {
	Frame   int    `json:"frame"`
	Pattern string `json:"pattern"`
	Key     bool   `json:"key"`
	Bytes   int    `json:"bytes"`
	Decoder string `json:"decoder"`
	// PSNR of the Y, U and V planes, in dB.
	PSNR [3]float64 `json:"psnr_db"`
}

// Report is what the self-test did, complete when Run succeeds and up to
// the failure when it does not.
type Report struct {
	// Encoder is the encoder's name and version ("libvpx v1.12.0").
	Encoder string  `json:"encoder"`
	Width   int     `json:"width"`
	Height  int     `json:"height"`
	MinPSNR float64 `json:"min_psnr_db"`
	// Frames is how many frames were encoded and checked.
	Frames int     `json:"frames"`
	Checks []Check `json:"checks"`
}

// frame is one step of the test sequence.
type frame struct {
	pattern string
	paint   func(yuv.BGRX)
	key     bool
}

// sequence: colour bars as a keyframe, the bars moved as an interframe
// (motion, the encoder's usual work), then a forced keyframe of fine luma
// detail and colour.
func sequence() []frame {
	return []frame{
		{"colour bars", func(f yuv.BGRX) { bars(f, 0) }, true},
		{"colour bars moved", func(f yuv.BGRX) { bars(f, Width/5) }, false},
		{"gradient and checkerboard", detail, true},
	}
}

// Run runs the self-test. In a build without the encoder it answers an
// error that wraps vp8.ErrUnavailable (and says why).
func Run(ctx context.Context) (Report, error) {
	rep := Report{Width: Width, Height: Height, MinPSNR: MinPSNR}
	if vp8.Available {
		rep.Encoder = "libvpx " + vp8.Version()
	}
	enc, err := vp8.NewEncoder(vp8.Options{Width: Width, Height: Height})
	if errors.Is(err, vp8.ErrUnavailable) {
		return rep, err // says why already
	}
	if err != nil {
		return rep, fmt.Errorf("open the encoder: %w", err)
	}
	defer enc.Close()
	dec, err := vp8.NewDecoder()
	if err != nil {
		return rep, fmt.Errorf("open libvpx's decoder: %w", err)
	}
	defer dec.Close()

	src := yuv.BGRX{Pix: make([]byte, Width*Height*4), Stride: Width * 4, Width: Width, Height: Height}
	for i, f := range sequence() {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		f.paint(src)
		if err := yuv.Convert(enc.Image(), src, nil); err != nil {
			return rep, fmt.Errorf("frame %d (%s): convert: %w", i+1, f.pattern, err)
		}
		want := clone(enc.Image())
		out, err := enc.Encode(time.Duration(i)*frameInterval, frameInterval, f.key)
		if err != nil {
			return rep, fmt.Errorf("frame %d (%s): %w", i+1, f.pattern, err)
		}
		if out.Key != f.key {
			return rep, fmt.Errorf("frame %d (%s): the encoder made a keyframe: %v, asked for %v", i+1, f.pattern, out.Key, f.key)
		}
		// libvpx decodes every frame, in order: an interframe refers to
		// the ones before it.
		got, err := dec.Decode(out.Data)
		if err == nil && got == nil {
			err = errors.New("the decoder showed no picture")
		}
		if err != nil {
			return rep, fmt.Errorf("frame %d (%s): libvpx's decoder: %w", i+1, f.pattern, err)
		}
		decoded := map[string]*image.YCbCr{DecoderLibvpx: got}
		if out.Key {
			img, err := decodeKeyframe(out.Data)
			if err != nil {
				return rep, fmt.Errorf("frame %d (%s): %s: %w", i+1, f.pattern, DecoderXImage, err)
			}
			decoded[DecoderXImage] = img
		}
		for _, name := range []string{DecoderXImage, DecoderLibvpx} {
			img, ok := decoded[name]
			if !ok {
				continue
			}
			c := Check{Frame: i + 1, Pattern: f.pattern, Key: out.Key, Bytes: len(out.Data), Decoder: name}
			c.PSNR, err = Compare(want, img)
			rep.Checks = append(rep.Checks, c)
			if err != nil {
				return rep, fmt.Errorf("frame %d (%s) decoded by %s: %w", i+1, f.pattern, name, err)
			}
		}
		rep.Frames++
	}
	return rep, nil
}

// decodeKeyframe decodes a keyframe with x/image/vp8.
func decodeKeyframe(data []byte) (*image.YCbCr, error) {
	var d xvp8.Decoder
	d.Init(bytes.NewReader(data), len(data))
	fh, err := d.DecodeFrameHeader()
	if err != nil {
		return nil, err
	}
	if !fh.KeyFrame {
		return nil, errors.New("the frame's header says it is no keyframe")
	}
	return d.DecodeFrame()
}

// Compare answers the PSNR of each plane of got against want, and an error
// when the sizes differ or a plane is below MinPSNR.
func Compare(want *yuv.Image, got *image.YCbCr) ([3]float64, error) {
	var psnr [3]float64
	if b := got.Rect; b.Dx() != want.Width || b.Dy() != want.Height {
		return psnr, fmt.Errorf("decoded %dx%d, encoded %dx%d", b.Dx(), b.Dy(), want.Width, want.Height)
	}
	if got.SubsampleRatio != image.YCbCrSubsampleRatio420 {
		return psnr, fmt.Errorf("decoded as %v, encoded as 4:2:0", got.SubsampleRatio)
	}
	cw, ch := yuv.ChromaSize(want.Width, want.Height)
	psnr[0] = planePSNR(want.Y, want.YStride, got.Y[got.YOffset(got.Rect.Min.X, got.Rect.Min.Y):], got.YStride, want.Width, want.Height)
	co := got.COffset(got.Rect.Min.X, got.Rect.Min.Y)
	psnr[1] = planePSNR(want.U, want.CStride, got.Cb[co:], got.CStride, cw, ch)
	psnr[2] = planePSNR(want.V, want.CStride, got.Cr[co:], got.CStride, cw, ch)
	for i, p := range psnr {
		if p < MinPSNR {
			return psnr, fmt.Errorf("plane %c decodes at %.1f dB against what was encoded, below %d dB: the picture is wrong", "YUV"[i], p, MinPSNR)
		}
	}
	return psnr, nil
}

// planePSNR is the PSNR of plane b against plane a, both w x h; identical
// planes answer PerfectPSNR.
func planePSNR(a []byte, aStride int, b []byte, bStride int, w, h int) float64 {
	var sum float64
	for y := range h {
		ra, rb := a[y*aStride:][:w], b[y*bStride:][:w]
		for x := range w {
			d := float64(ra[x]) - float64(rb[x])
			sum += d * d
		}
	}
	if sum == 0 {
		return PerfectPSNR
	}
	return min(10*math.Log10(255*255/(sum/float64(w*h))), PerfectPSNR)
}

func clone(im *yuv.Image) *yuv.Image {
	c := yuv.New(im.Width, im.Height)
	copy(c.Y, im.Y)
	copy(c.U, im.U)
	copy(c.V, im.V)
	return c
}

// bars paints vertical colour bars, moved right by shift pixels.
func bars(f yuv.BGRX, shift int) {
	// The eight bars of a test card, as R, G, B: every combination of full
	// primaries, so that a swap of U and V, or of R and B, changes the
	// picture.
	colours := [8][3]byte{
		{255, 255, 255}, {255, 255, 0}, {0, 255, 255}, {0, 255, 0},
		{255, 0, 255}, {255, 0, 0}, {0, 0, 255}, {0, 0, 0},
	}
	for y := range f.Height {
		for x := range f.Width {
			c := colours[((x+f.Width-shift)%f.Width)*len(colours)/f.Width]
			setRGB(f, x, y, c)
		}
	}
}

// detail paints a grey ramp across the top half and a checkerboard of
// 8-pixel squares in two colours across the bottom half: edges every
// macroblock must keep.
func detail(f yuv.BGRX) {
	for y := range f.Height {
		for x := range f.Width {
			var c [3]byte
			if y < f.Height/2 {
				v := byte(x * 255 / (f.Width - 1))
				c = [3]byte{v, v, v}
			} else if (x/8+y/8)%2 == 0 {
				c = [3]byte{230, 120, 30}
			} else {
				c = [3]byte{20, 60, 200}
			}
			setRGB(f, x, y, c)
		}
	}
}

func setRGB(f yuv.BGRX, x, y int, c [3]byte) {
	p := f.Pix[y*f.Stride+x*4:]
	p[0], p[1], p[2], p[3] = c[2], c[1], c[0], 0
}
