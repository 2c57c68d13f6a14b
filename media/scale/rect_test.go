package scale_test

import (
	"bytes"
	"fmt"
	"image"
	"testing"

	"github.com/trycua/cua-spacesd/media/scale"
	"github.com/trycua/cua-spacesd/media/scale/scaletest"
)

// checkRect scales a frame whole, changes the source pixels of changed,
// scales only OutRect(changed), and requires the result to equal a whole
// scaling of the changed frame, and nothing outside the out rect to move:
// what a stream does with each frame's damage.
func checkRect(t *testing.T, s *scale.Scaler, w, h int, r scale.Ratio, changed image.Rectangle, seed uint64, to scale.Format) {
	t.Helper()
	stride := w*4 + 4
	src := scaletest.Pattern(w, h, stride, seed, byte(seed))
	ow, oh := r.Size(w, h)
	frame := func(pix []byte) scale.Frame { return scale.Frame{Pix: pix, Stride: stride, Width: w, Height: h} }
	dst := scale.Frame{Pix: make([]byte, ow*oh*4), Stride: ow * 4, Width: ow, Height: oh}
	if err := s.Scale(dst, to, frame(src), r); err != nil {
		t.Fatal(err)
	}
	before := bytes.Clone(dst.Pix)
	c := changed.Intersect(image.Rect(0, 0, w, h))
	for y := c.Min.Y; y < c.Max.Y; y++ {
		for x := c.Min.X; x < c.Max.X; x++ {
			p := src[y*stride+x*4:]
			p[0], p[1], p[2] = ^p[0], p[1]^0x5a, p[2]+77
		}
	}
	out := r.OutRect(changed, w, h)
	if err := s.ScaleRect(dst, to, frame(src), r, out); err != nil {
		t.Fatal(err)
	}
	whole := scale.Frame{Pix: make([]byte, ow*oh*4), Stride: ow * 4, Width: ow, Height: oh}
	if err := s.Scale(whole, to, frame(src), r); err != nil {
		t.Fatal(err)
	}
	for i := range dst.Pix {
		x, y := i%dst.Stride/4, i/dst.Stride
		if dst.Pix[i] != whole.Pix[i] {
			t.Fatalf("%dx%d by %v, %v changed, out rect %v: pixel (%d, %d) byte %d = %d, a whole scaling gives %d",
				w, h, r, changed, out, x, y, i%4, dst.Pix[i], whole.Pix[i])
		}
		if !image.Pt(x, y).In(out) && dst.Pix[i] != before[i] {
			t.Fatalf("%dx%d by %v: pixel (%d, %d), outside the out rect %v, was written", w, h, r, x, y, out)
		}
	}
}

func TestScaleRect(t *testing.T) {
	var s scale.Scaler
	for _, tc := range []struct {
		w, h    int
		r       scale.Ratio
		changed image.Rectangle
	}{
		{1920, 1080, scale.Ratio{2, 3}, image.Rect(100, 200, 300, 260)},     // the 720p stream of a 1080p screen
		{1920, 1080, scale.Ratio{2, 3}, image.Rect(1, 1, 2, 2)},             // one pixel
		{1920, 1080, scale.Ratio{1, 2}, image.Rect(1917, 1075, 1920, 1080)}, // the corner
		{641, 479, scale.Ratio{5, 8}, image.Rect(-5, -5, 700, 13)},          // past the edges
		{333, 211, scale.Ratio{1, 3}, image.Rect(17, 3, 18, 211)},           // a column
		{333, 211, scale.Ratio{999, 1000}, image.Rect(300, 0, 333, 1)},      // a row's end
		{1000, 9, scale.Ratio{1, 97}, image.Rect(500, 4, 501, 5)},
		{64, 64, scale.One, image.Rect(3, 3, 9, 9)},
		{17, 17, scale.Ratio{3, 4}, image.Rect(0, 0, 17, 17)},
	} {
		for _, to := range []scale.Format{scale.BGRX, scale.RGBA} {
			t.Run(fmt.Sprintf("%dx%d@%d:%d/%v/%v", tc.w, tc.h, tc.r.Num, tc.r.Den, tc.changed, to), func(t *testing.T) {
				checkRect(t, &s, tc.w, tc.h, tc.r, tc.changed, uint64(tc.w), to)
			})
		}
	}
}

func TestOutRect(t *testing.T) {
	for _, tc := range []struct {
		w, h    int
		r       scale.Ratio
		changed image.Rectangle
		want    image.Rectangle
	}{
		// At 2/3 output pixel i reads source [1.5i, 1.5i+1.5): pixel 3
		// only by output 2 ([3, 4.5)).
		{1920, 1080, scale.Ratio{2, 3}, image.Rect(3, 3, 4, 4), image.Rect(2, 2, 3, 3)},
		// Pixel 4 by output 2 ([3, 4.5)) and 3 ([4.5, 6)).
		{1920, 1080, scale.Ratio{2, 3}, image.Rect(4, 4, 5, 5), image.Rect(2, 2, 4, 4)},
		{1920, 1080, scale.Ratio{1, 2}, image.Rect(0, 0, 1920, 1080), image.Rect(0, 0, 960, 540)},
		{1920, 1080, scale.Ratio{1, 2}, image.Rect(-10, -10, 5000, 5000), image.Rect(0, 0, 960, 540)},
		{7, 5, scale.Ratio{3, 7}, image.Rect(6, 4, 7, 5), image.Rect(2, 1, 3, 2)}, // source row 4 is past the 2 output rows' area: clipped
		{64, 64, scale.One, image.Rect(3, 3, 9, 9), image.Rect(3, 3, 9, 9)},
	} {
		if got := tc.r.OutRect(tc.changed, tc.w, tc.h); got != tc.want {
			t.Errorf("%v.OutRect(%v) of %dx%d = %v, want %v", tc.r, tc.changed, tc.w, tc.h, got, tc.want)
		}
	}
}

// FuzzScaleRect: any small frame, ratio and changed rectangle: scaling
// the out rect of a change equals scaling the whole changed frame.
func FuzzScaleRect(f *testing.F) {
	f.Add(uint16(64), uint16(36), uint16(2), uint16(3), int16(5), int16(5), int16(9), int16(9), uint64(1), false)
	f.Add(uint16(65), uint16(37), uint16(1), uint16(7), int16(-3), int16(30), int16(80), int16(31), uint64(2), true)
	f.Add(uint16(1), uint16(1), uint16(1), uint16(1), int16(0), int16(0), int16(1), int16(1), uint64(3), false)
	f.Add(uint16(33), uint16(21), uint16(999), uint16(1000), int16(32), int16(0), int16(33), int16(21), uint64(4), true)
	f.Fuzz(func(t *testing.T, w, h, num, den uint16, x0, y0, x1, y1 int16, seed uint64, rgba bool) {
		sw, sh := int(w%80)+1, int(h%80)+1
		r := scale.Ratio{Num: int(num%64) + 1, Den: int(den%64) + 1}
		if r.Num > r.Den {
			r.Num, r.Den = r.Den, r.Num
		}
		to := scale.BGRX
		if rgba {
			to = scale.RGBA
		}
		var s scale.Scaler
		checkRect(t, &s, sw, sh, r, image.Rect(int(x0), int(y0), int(x1), int(y1)), seed, to)
	})
}
