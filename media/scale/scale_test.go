package scale_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/trycua/cua-spacesd/media/scale"
	"github.com/trycua/cua-spacesd/media/scale/scaletest"
)

// tolerance is how far (in levels of 255) a scaled channel of a w x h
// source may be from the reference at ratio r: half a level, as the output
// is rounded to a whole one, plus what the fixed-point weights (12 bits of
// fraction) may be off. Each weight is the difference of two cumulative
// sums rounded to within half a unit, so along an axis of t taps the sum is
// off by at most half a unit times the rise and fall of the values, 255 per
// step: 255 * (t-1) / 2 / 4096 levels.
func tolerance(r scale.Ratio, w, h int) float64 {
	taps := (r.Den+r.Num-1)/r.Num + 1
	tx, ty := min(taps, w), min(taps, h)
	return 0.5 + 255*float64(tx-1+ty-1)/2/4096 + 1e-9
}

func TestFit(t *testing.T) {
	for _, tc := range []struct {
		w, h, maxDim int
		want         scale.Ratio
		ow, oh       int
	}{
		{1920, 1080, 1280, scale.Ratio{2, 3}, 1280, 720},
		{1080, 1920, 1280, scale.Ratio{2, 3}, 720, 1280},
		{1921, 1081, 1280, scale.Ratio{1280, 1921}, 1280, 720}, // 720.29 rows: rounded down
		{1281, 721, 1280, scale.Ratio{1280, 1281}, 1280, 720},  // just over: 720.44 rows
		{1280, 720, 1280, scale.One, 1280, 720},                // exactly fits
		{1279, 719, 1280, scale.One, 1279, 719},                // just under: no scaling
		{1920, 1080, 0, scale.One, 1920, 1080},                 // 0: no scaling
		{3840, 2160, 1280, scale.Ratio{1, 3}, 1280, 720},
		{10000, 3, 100, scale.Ratio{1, 100}, 100, 1}, // a side below one pixel stays one
		{7, 5, 3, scale.Ratio{3, 7}, 3, 2},
	} {
		r := scale.Fit(tc.w, tc.h, tc.maxDim)
		ow, oh := r.Size(tc.w, tc.h)
		if r != tc.want || ow != tc.ow || oh != tc.oh {
			t.Errorf("Fit(%d, %d, %d) = %v giving %dx%d, want %v giving %dx%d", tc.w, tc.h, tc.maxDim, r, ow, oh, tc.want, tc.ow, tc.oh)
		}
		if tc.maxDim > 0 && max(ow, oh) > tc.maxDim {
			t.Errorf("Fit(%d, %d, %d): %dx%d exceeds the maximum", tc.w, tc.h, tc.maxDim, ow, oh)
		}
	}
}

// The scaled pixels are the area average of the reference, on a pattern
// of one-pixel lines, a checkerboard and glyph strokes, at the ratios an
// agent asks for and at odd ones: a source with and without pad between
// rows, sizes and scales just over and under 1, integer and fractional
// ratios, and extreme ones.
func TestMatchesReference(t *testing.T) {
	// One Scaler for all: it keeps the last size's weights, which must not
	// serve the next size.
	var s scale.Scaler
	for _, tc := range []struct {
		w, h   int
		r      scale.Ratio
		padded bool
	}{
		{1920, 1080, scale.Fit(1920, 1080, 1280), false},
		{1921, 1081, scale.Fit(1921, 1081, 1280), true},
		{1281, 721, scale.Fit(1281, 721, 1280), false},
		{1279, 719, scale.Fit(1279, 719, 1280), true}, // One: a copy
		{641, 479, scale.Ratio{1, 2}, true},
		{640, 480, scale.Ratio{1, 3}, false},
		{333, 211, scale.Ratio{5, 7}, true},
		{333, 211, scale.Ratio{999, 1000}, false},
		{1000, 9, scale.Ratio{1, 97}, true},
		{9, 1000, scale.Ratio{1, 97}, false},
		{257, 3, scale.Ratio{1, 256}, false}, // one output pixel per axis, clipped rows
		{1, 1, scale.One, false},
		{3, 2, scale.Ratio{1, 2}, true},
		{1920, 1080, scale.Ratio{1, 2}, false}, // the first size again, another ratio
		{1921, 1081, scale.Fit(1921, 1081, 1280), false},
	} {
		t.Run(fmt.Sprintf("%dx%d@%d:%d", tc.w, tc.h, tc.r.Num, tc.r.Den), func(t *testing.T) {
			stride := tc.w * 4
			if tc.padded {
				stride += 12
			}
			src := scaletest.Pattern(tc.w, tc.h, stride, 7, 0xa5)
			ow, oh := tc.r.Size(tc.w, tc.h)
			ref := scaletest.Reference(src, tc.w, tc.h, stride, tc.r.Num, tc.r.Den, ow, oh)
			for _, to := range []scale.Format{scale.RGBA, scale.BGRX} {
				dst := scaled(t, &s, src, tc.w, tc.h, stride, tc.r, to)
				for y := range oh {
					for x := range ow {
						got := rgb(dst, x, y, to)
						for c := range 3 {
							if d := math.Abs(float64(got[c]) - ref[y*ow+x][c]); d > tolerance(tc.r, tc.w, tc.h) {
								t.Fatalf("%v: pixel (%d, %d) channel %d = %d, reference %.3f", to, x, y, c, got[c], ref[y*ow+x][c])
							}
						}
						if a := dst.Pix[y*dst.Stride+x*4+3]; a != 0xff {
							t.Fatalf("%v: pixel (%d, %d) has alpha %#x, want opaque", to, x, y, a)
						}
					}
				}
			}
		})
	}
}

// A flat colour stays exactly that colour at any ratio: the weights of
// each output pixel add up to exactly one.
func TestFlatColourIsExact(t *testing.T) {
	var s scale.Scaler
	for _, r := range []scale.Ratio{{2, 3}, {1280, 1921}, {1, 7}, {999, 1000}, {13, 64}} {
		w, h := 301, 203
		src := bytes.Repeat([]byte{0xfe, 0x01, 0x80, 0x37}, w*h)
		dst := scaled(t, &s, src, w, h, w*4, r, scale.BGRX)
		for i := 0; i < len(dst.Pix); i += 4 {
			if got := dst.Pix[i : i+3]; !bytes.Equal(got, []byte{0xfe, 0x01, 0x80}) {
				t.Fatalf("ratio %v: pixel %d is %x, want fe0180", r, i/4, got)
			}
		}
	}
}

// The scaler writes each output row's pixels and nothing past them: the
// pad between rows of the destination keeps its bytes.
func TestDestinationPadIsKept(t *testing.T) {
	var s scale.Scaler
	w, h := 1920, 1080
	src := scaletest.Pattern(w, h, w*4, 1, 0)
	for _, r := range []scale.Ratio{{2, 3}, scale.One} {
		ow, oh := r.Size(w, h)
		dst := scale.Frame{Pix: bytes.Repeat([]byte{0x5a}, (oh-1)*(ow*4+8)+ow*4), Stride: ow*4 + 8, Width: ow, Height: oh}
		if err := s.Scale(dst, scale.RGBA, scale.Frame{Pix: src, Stride: w * 4, Width: w, Height: h}, r); err != nil {
			t.Fatal(err)
		}
		for y := range oh - 1 {
			if pad := dst.Pix[y*dst.Stride+ow*4 : (y+1)*dst.Stride]; !bytes.Equal(pad, bytes.Repeat([]byte{0x5a}, 8)) {
				t.Fatalf("ratio %v: the pad after row %d became %x", r, y, pad)
			}
		}
	}
}

func TestScaleRefusesBadInput(t *testing.T) {
	var s scale.Scaler
	src := scale.Frame{Pix: make([]byte, 40*30*4), Stride: 160, Width: 40, Height: 30}
	dst := func(w, h int) scale.Frame {
		return scale.Frame{Pix: make([]byte, w*h*4), Stride: w * 4, Width: w, Height: h}
	}
	for _, tc := range []struct {
		name     string
		dst, src scale.Frame
		to       scale.Format
		r        scale.Ratio
	}{
		{"zero ratio", dst(20, 15), src, scale.BGRX, scale.Ratio{0, 2}},
		{"enlarging ratio", dst(80, 60), src, scale.BGRX, scale.Ratio{2, 1}},
		{"negative ratio", dst(20, 15), src, scale.BGRX, scale.Ratio{-1, -2}},
		{"huge denominator", dst(1, 1), src, scale.BGRX, scale.Ratio{1, scale.MaxSide + 1}},
		{"unknown format", dst(20, 15), src, 0, scale.Ratio{1, 2}},
		{"empty source", dst(1, 1), scale.Frame{}, scale.BGRX, scale.Ratio{1, 2}},
		{"short source", dst(20, 15), scale.Frame{Pix: src.Pix[:len(src.Pix)-1], Stride: 160, Width: 40, Height: 30}, scale.BGRX, scale.Ratio{1, 2}},
		{"narrow stride", dst(20, 15), scale.Frame{Pix: src.Pix, Stride: 159, Width: 40, Height: 30}, scale.BGRX, scale.Ratio{1, 2}},
		{"huge stride", dst(20, 15), scale.Frame{Pix: src.Pix, Stride: math.MaxInt, Width: 40, Height: 30}, scale.BGRX, scale.Ratio{1, 2}},
		{"huge stride, one row short", dst(1, 1), scale.Frame{Pix: src.Pix, Stride: math.MaxInt / 2, Width: 1, Height: 3}, scale.BGRX, scale.Ratio{1, 3}},
		{"tall frame short of rows", dst(1, 16384), scale.Frame{Pix: make([]byte, 400), Stride: 4, Width: 1, Height: scale.MaxSide}, scale.BGRX, scale.Ratio{1, 4}},
		{"short destination", scale.Frame{Pix: make([]byte, 10), Stride: 80, Width: 20, Height: 15}, src, scale.BGRX, scale.Ratio{1, 2}},
	} {
		if err := s.Scale(tc.dst, tc.to, tc.src, tc.r); err == nil {
			t.Errorf("%s: scaled without an error", tc.name)
		}
	}
	if err := s.Scale(dst(21, 15), scale.BGRX, src, scale.Ratio{1, 2}); !errors.Is(err, scale.ErrSize) {
		t.Errorf("a destination of the wrong size: %v, want ErrSize", err)
	}
}

// scaled scales src into a fresh, tightly packed destination.
func scaled(t testing.TB, s *scale.Scaler, src []byte, w, h, stride int, r scale.Ratio, to scale.Format) scale.Frame {
	t.Helper()
	ow, oh := r.Size(w, h)
	dst := scale.Frame{Pix: make([]byte, ow*oh*4), Stride: ow * 4, Width: ow, Height: oh}
	for i := range dst.Pix {
		dst.Pix[i] = 0x33 // not a result: every byte must be written
	}
	if err := s.Scale(dst, to, scale.Frame{Pix: src, Stride: stride, Width: w, Height: h}, r); err != nil {
		t.Fatalf("scale %dx%d by %v to %v: %v", w, h, r, to, err)
	}
	return dst
}

// rgb is output pixel (x, y) as red, green, blue.
func rgb(f scale.Frame, x, y int, to scale.Format) [3]byte {
	p := f.Pix[y*f.Stride+x*4:]
	if to == scale.RGBA {
		return [3]byte{p[0], p[1], p[2]}
	}
	return [3]byte{p[2], p[1], p[0]}
}

// One Scaler serves concurrent callers of different sizes: each gets its
// own result, whatever geometry another keeps (run with -race).
func TestConcurrentScales(t *testing.T) {
	var s scale.Scaler
	sizes := [][2]int{{640, 480}, {641, 479}, {1000, 7}}
	want := make([][]byte, len(sizes))
	for i, sz := range sizes {
		src := scaletest.Pattern(sz[0], sz[1], sz[0]*4, uint64(i), 0)
		want[i] = scaled(t, new(scale.Scaler), src, sz[0], sz[1], sz[0]*4, scale.Fit(sz[0], sz[1], 300), scale.BGRX).Pix
	}
	errs := make(chan error, 4*len(sizes))
	for range 4 {
		for i, sz := range sizes {
			go func() {
				src := scaletest.Pattern(sz[0], sz[1], sz[0]*4, uint64(i), 0)
				r := scale.Fit(sz[0], sz[1], 300)
				for range 20 {
					w, h := r.Size(sz[0], sz[1])
					dst := scale.Frame{Pix: make([]byte, w*h*4), Stride: w * 4, Width: w, Height: h}
					if err := s.Scale(dst, scale.BGRX, scale.Frame{Pix: src, Stride: sz[0] * 4, Width: sz[0], Height: sz[1]}, r); err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(dst.Pix, want[i]) {
						errs <- fmt.Errorf("%dx%d: a concurrent scale differs from a lone one", sz[0], sz[1])
						return
					}
				}
				errs <- nil
			}()
		}
	}
	for range 4 * len(sizes) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
