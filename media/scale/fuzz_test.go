package scale_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/trycua/cua-spacesd/media/scale"
	"github.com/trycua/cua-spacesd/media/scale/scaletest"
)

// FuzzScale scales frames of any small size, stride and ratio, source and
// destination padded between rows: the pixels match the reference area
// average, and no byte outside the destination's pixels changes. A ratio
// Scale refuses must be one the package defines as invalid.
func FuzzScale(f *testing.F) {
	for _, s := range []struct {
		w, h, srcPad, dstPad, num, den uint16
		seed                           uint64
		rgba                           bool
	}{
		{64, 36, 0, 0, 2, 3, 1, false},
		{65, 37, 4, 8, 1280, 1921, 2, true},
		{17, 9, 12, 0, 1, 1, 3, true},
		{1, 1, 0, 4, 1, 7, 4, false},
		{40, 3, 0, 0, 1, 97, 5, true},
		{33, 21, 3, 1, 999, 1000, 6, false},
		{7, 64, 1, 1, 5, 9, 7, true},
	} {
		f.Add(s.w, s.h, s.srcPad, s.dstPad, s.num, s.den, s.seed, s.rgba)
	}
	f.Fuzz(func(t *testing.T, w, h, srcPad, dstPad, num, den uint16, seed uint64, rgba bool) {
		// Small frames, so that the reference stays quick; any ratio.
		sw, sh := int(w%80)+1, int(h%80)+1
		srcStride, dstStride := sw*4+int(srcPad%16), 0
		r := scale.Ratio{Num: int(num), Den: int(den)}
		to := scale.BGRX
		if rgba {
			to = scale.RGBA
		}
		src := scaletest.Pattern(sw, sh, srcStride, seed, byte(seed>>8))
		srcCopy := bytes.Clone(src)
		var s scale.Scaler
		valid := r.Num >= 1 && r.Num <= r.Den && r.Den <= scale.MaxSide
		if !valid {
			dst := scale.Frame{Pix: make([]byte, 4), Stride: 4, Width: 1, Height: 1}
			if err := s.Scale(dst, to, scale.Frame{Pix: src, Stride: srcStride, Width: sw, Height: sh}, r); err == nil {
				t.Fatalf("ratio %v was accepted", r)
			}
			return
		}
		ow, oh := r.Size(sw, sh)
		dstStride = ow*4 + int(dstPad%16)
		const fill = 0xc3
		dst := scale.Frame{Pix: bytes.Repeat([]byte{fill}, (oh-1)*dstStride+ow*4+int(dstPad%16)), Stride: dstStride, Width: ow, Height: oh}
		if err := s.Scale(dst, to, scale.Frame{Pix: src, Stride: srcStride, Width: sw, Height: sh}, r); err != nil {
			t.Fatalf("scale %dx%d by %v: %v", sw, sh, r, err)
		}
		if !bytes.Equal(src, srcCopy) {
			t.Fatal("the source changed")
		}
		ref := scaletest.Reference(src, sw, sh, srcStride, r.Num, r.Den, ow, oh)
		for i, b := range dst.Pix {
			y, x := i/dstStride, i%dstStride
			if x >= ow*4 || y >= oh {
				if b != fill {
					t.Fatalf("byte %d, past row %d's pixels, was written", i, y)
				}
				continue
			}
			c := x % 4
			if c == 3 {
				if b != 0xff {
					t.Fatalf("pixel (%d, %d) alpha %#x", x/4, y, b)
				}
				continue
			}
			ch := 2 - c // BGRX: blue is byte 0, the reference's channel 2
			if to == scale.RGBA {
				ch = c
			}
			if d := math.Abs(float64(b) - ref[y*ow+x/4][ch]); d > tolerance(r, sw, sh) {
				t.Fatalf("%dx%d by %v to %v: pixel (%d, %d) byte %d = %d, reference %.3f", sw, sh, r, to, x/4, y, c, b, ref[y*ow+x/4][ch])
			}
		}
	})
}
