// Package scale shrinks frames of the X server's BGRX pixels for
// screenshots and streams by an area average: each output pixel is the
// mean of the source area it covers, a source pixel that straddles its
// edge counted by the part inside. Any ratio is exact (not only integer
// ones), text and thin lines average into grey instead of aliasing away,
// and one ratio holds for both axes, so an output pixel maps back to the
// source by a single scale. It reads BGRX straight from a capture, writes
// BGRX (for media/jpegenc) or opaque RGBA (for image/png) in the same
// pass, and works over parallel bands of output rows.
//
// The package uses the standard library only.
package scale

import (
	"errors"
	"fmt"
	"image"
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	// MaxSide bounds a frame's width and height (and a ratio's terms):
	// the weights are computed in units of 1/Num source pixel, so side
	// times Den must stay far inside an int32 of fixed-point arithmetic.
	MaxSide = 1 << 16

	// bytesPerPixel is the size of a BGRX or RGBA pixel.
	bytesPerPixel = 4

	// minParallelPixels is the source size from which a frame is split
	// into bands on their own goroutines: below it, starting and waiting
	// for them costs more than they save.
	minParallelPixels = 128 * 1024

	// bandsPerProc evens out bands that finish at different times (a
	// goroutine descheduled by another process on a busy machine).
	bandsPerProc = 2
)

// Format is the byte order of an output pixel.
type Format uint8

const (
	// BGRX is the X server's little-endian 32-bit ZPixmap layout: blue,
	// green, red, then a byte set to 0xff (jpegenc.BGRX ignores it).
	BGRX Format = iota + 1
	// RGBA is image.RGBA's layout with alpha 0xff: opaque, as a screen is.
	RGBA
)

func (f Format) String() string {
	switch f {
	case BGRX:
		return "BGRX"
	case RGBA:
		return "RGBA"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// Frame is a frame of 4-byte pixels: row y starts at Pix[y*Stride].
type Frame struct {
	Pix           []byte
	Stride        int
	Width, Height int
}

// check reports what is wrong with f, the frame called what.
func (f Frame) check(what string) error {
	switch {
	case f.Width < 1 || f.Height < 1 || f.Width > MaxSide || f.Height > MaxSide:
		return fmt.Errorf("%s frame %dx%d: each side must be 1-%d", what, f.Width, f.Height, MaxSide)
	case f.Stride < f.Width*bytesPerPixel:
		return fmt.Errorf("%s frame stride %d is below width %d x %d bytes", what, f.Stride, f.Width, bytesPerPixel)
	case !f.fits():
		return fmt.Errorf("%s frame of %dx%d (stride %d) needs %d rows of %d bytes, %d apart; got %d bytes",
			what, f.Width, f.Height, f.Stride, f.Height, f.Width*bytesPerPixel, f.Stride, len(f.Pix))
	}
	return nil
}

// fits reports whether Pix holds every row, (Height-1)*Stride + 4*Width
// bytes, computed by division so that no product can overflow.
func (f Frame) fits() bool {
	row := f.Width * bytesPerPixel
	return len(f.Pix) >= row && (f.Height == 1 || (len(f.Pix)-row)/f.Stride >= f.Height-1)
}

// Ratio is an exact scale: Num output pixels per Den source pixels, on
// both axes, 0 < Num <= Den (a shrink, or 1:1). Output pixel (x, y) is the
// mean of the source area [x*Den/Num, (x+1)*Den/Num) by [y*Den/Num,
// (y+1)*Den/Num); its centre is source point ((x+0.5)/s, (y+0.5)/s) with s
// = Num/Den, which is how input given in output coordinates maps back.
type Ratio struct{ Num, Den int }

// One is the ratio that leaves a frame's size as it is.
var One = Ratio{1, 1}

// Fit is the ratio that brings a w x h frame's longer side to maxDim,
// reduced to lowest terms; One when it already fits or maxDim <= 0.
func Fit(w, h, maxDim int) Ratio {
	long := max(w, h)
	if maxDim <= 0 || long <= maxDim {
		return One
	}
	g := gcd(maxDim, long)
	return Ratio{maxDim / g, long / g}
}

// Float is the ratio as a number: output pixels per source pixel. It is
// the scale a screenshot answers, and input divides by.
func (r Ratio) Float() float64 { return float64(r.Num) / float64(r.Den) }

// IsOne reports whether r keeps the size.
func (r Ratio) IsOne() bool { return r.Num == r.Den && r.Num > 0 }

// Size is the output size of a w x h source: each side times r, rounded
// down so that every output pixel covers source pixels only (and its
// centre lies on the source), but at least 1. The longer side of a frame
// scaled by Fit is exactly its maxDim.
func (r Ratio) Size(w, h int) (int, int) {
	num, den := int64(r.Num), int64(r.Den)
	return int(max(1, int64(w)*num/den)), int(max(1, int64(h)*num/den))
}

// check reports what is wrong with r.
func (r Ratio) check() error {
	if r.Num < 1 || r.Num > r.Den || r.Den > MaxSide {
		return fmt.Errorf("scale ratio %d/%d: want 0 < num <= den <= %d", r.Num, r.Den, MaxSide)
	}
	return nil
}

// reduced is r in lowest terms.
func (r Ratio) reduced() Ratio {
	g := gcd(r.Num, r.Den)
	return Ratio{r.Num / g, r.Den / g}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Scaler scales frames; it keeps its working rows between calls, so a
// stream of screenshots does not allocate them each time. The zero value
// is ready; a Scaler is safe for concurrent use.
type Scaler struct {
	work sync.Pool                // *band: one goroutine's ring of shrunk rows
	last atomic.Pointer[geometry] // the last scaling's weights, reused for the same size and ratio
}

// ErrSize is wrapped by the error of a destination whose size is not
// r.Size of the source.
var ErrSize = errors.New("destination size does not match the ratio")

// Scale writes src (BGRX pixels) scaled by r into dst, in format to. dst
// must be exactly r.Size(src.Width, src.Height); dst and src must not
// overlap. Ratio One copies (BGRX) or converts (RGBA).
func (s *Scaler) Scale(dst Frame, to Format, src Frame, r Ratio) error {
	return s.ScaleRect(dst, to, src, r, image.Rect(0, 0, dst.Width, dst.Height))
}

// ScaleRect is Scale for the output pixels of rect only (clipped to dst);
// the others are left as they are. A stream scales what changed this way:
// OutRect of each changed source rectangle.
func (s *Scaler) ScaleRect(dst Frame, to Format, src Frame, r Ratio, rect image.Rectangle) error {
	if err := src.check("source"); err != nil {
		return err
	}
	if err := dst.check("destination"); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	if to != BGRX && to != RGBA {
		return fmt.Errorf("scale: output format %v is unknown", to)
	}
	r = r.reduced()
	if w, h := r.Size(src.Width, src.Height); dst.Width != w || dst.Height != h {
		return fmt.Errorf("scale %dx%d by %d/%d: destination is %dx%d, want %dx%d: %w",
			src.Width, src.Height, r.Num, r.Den, dst.Width, dst.Height, w, h, ErrSize)
	}
	rect = rect.Canon().Intersect(image.Rect(0, 0, dst.Width, dst.Height))
	if rect.Empty() {
		return nil
	}
	// An even first column: the horizontal pass works on pairs of output
	// pixels.
	x0, x1 := rect.Min.X&^1, rect.Max.X
	var job func(y0, y1 int)
	if r.IsOne() {
		job = func(y0, y1 int) { convertRows(dst, to, src, x0, x1, y0, y1) }
	} else {
		key := geometryKey{src.Width, src.Height, r}
		g := s.last.Load()
		if g == nil || g.key != key {
			g = newGeometry(src.Width, src.Height, r)
			s.last.Store(g)
		}
		p := &plan{src: src, dst: dst, to: to, x0: x0, x1: x1, geometry: g}
		job = func(y0, y1 int) {
			b, _ := s.work.Get().(*band)
			if b == nil {
				b = new(band)
			}
			defer s.work.Put(b)
			b.scaleRows(p, y0, y1)
		}
	}
	// The work is the source area the rows read.
	pixels := int(int64(rect.Dy()) * int64(r.Den) / int64(r.Num) * int64(x1-x0) * int64(r.Den) / int64(r.Num))
	parallel(rect.Min.Y, rect.Max.Y, pixels, job)
	return nil
}

// OutRect is the rectangle of output pixels at ratio r that read any
// source pixel of src (a w x h source's changed area): output pixel i
// reads source [i*Den/Num, (i+1)*Den/Num).
func (r Ratio) OutRect(src image.Rectangle, w, h int) image.Rectangle {
	ow, oh := r.Size(w, h)
	num, den := int64(r.Num), int64(r.Den)
	lo := func(v int) int { return int(int64(v) * num / den) }
	hi := func(v int) int { return int((int64(v)*num + den - 1) / den) }
	src = src.Canon()
	return image.Rect(lo(src.Min.X), lo(src.Min.Y), hi(src.Max.X), hi(src.Max.Y)).Intersect(image.Rect(0, 0, ow, oh))
}

// parallel runs job over bands of rows [first, end), on their own
// goroutines when the work (pixels) is big enough; the last band runs on
// the caller's.
func parallel(first, end, pixels int, job func(y0, y1 int)) {
	n := end - first
	bands := 1
	if pixels >= minParallelPixels {
		bands = min(n, runtime.GOMAXPROCS(0)*bandsPerProc)
	}
	if bands <= 1 {
		job(first, end)
		return
	}
	per := (n + bands - 1) / bands
	var wg sync.WaitGroup
	for y := first; y < end; y += per {
		y1 := min(y+per, end)
		if y1 == end {
			job(y, y1)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			job(y, y1)
		}()
	}
	wg.Wait()
}
