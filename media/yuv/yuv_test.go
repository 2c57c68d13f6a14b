package yuv_test

import (
	"bytes"
	"image"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trycua/cua-spacesd/media/yuv"
)

func randomFrame(rng *rand.Rand, w, h int) yuv.BGRX {
	stride := w*4 + rng.IntN(3)*4 // a padded stride too, as X sends for some widths
	f := yuv.BGRX{Pix: make([]byte, stride*h), Stride: stride, Width: w, Height: h}
	for i := range f.Pix {
		f.Pix[i] = byte(rng.Uint32())
	}
	return f
}

// reference is BT.601 limited range straight from the standard, in
// floating point: what the fixed-point conversion must match within one
// step of rounding.
func reference(f yuv.BGRX, x, y int) (float64, float64, float64) {
	p := f.Pix[y*f.Stride+x*4:]
	b, g, r := float64(p[0]), float64(p[1]), float64(p[2])
	ey := (0.299*r + 0.587*g + 0.114*b) / 255
	return 16 + 219*ey, 128 + 224*(b/255-ey)/1.772, 128 + 224*(r/255-ey)/1.402
}

// TestReference compares every sample with the floating-point formula of
// the standard (the chroma one as the mean of its 2x2 block), for sizes
// even and odd, where the last row and column stand for the missing ones.
func TestReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []image.Point{{1, 1}, {2, 2}, {3, 5}, {16, 9}, {33, 17}, {640, 360}} {
		f := randomFrame(rng, size.X, size.Y)
		img := yuv.New(size.X, size.Y)
		if err := yuv.Convert(img, f, nil); err != nil {
			t.Fatal(err)
		}
		for y := range size.Y {
			for x := range size.X {
				want, _, _ := reference(f, x, y)
				if got := float64(img.Y[y*img.YStride+x]); math.Abs(got-want) > 1 {
					t.Fatalf("%v: Y(%d, %d) = %v, want %.2f", size, x, y, got, want)
				}
			}
		}
		cw, ch := yuv.ChromaSize(size.X, size.Y)
		for cy := range ch {
			for cx := range cw {
				var u, v float64
				for _, d := range []image.Point{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
					_, pu, pv := reference(f, min(2*cx+d.X, size.X-1), min(2*cy+d.Y, size.Y-1))
					u, v = u+pu/4, v+pv/4
				}
				gu, gv := float64(img.U[cy*img.CStride+cx]), float64(img.V[cy*img.CStride+cx])
				if math.Abs(gu-u) > 1 || math.Abs(gv-v) > 1 {
					t.Fatalf("%v: UV(%d, %d) = %v, %v, want %.2f, %.2f", size, cx, cy, gu, gv, u, v)
				}
			}
		}
	}
}

// TestKnownColours pins the values a decoder turns back into the test's
// colours (a regression here shows as a wrong colour in every stream).
func TestKnownColours(t *testing.T) {
	for _, c := range []struct {
		bgr     [3]byte
		y, u, v byte
	}{
		{[3]byte{0, 0, 0}, 16, 128, 128},
		{[3]byte{255, 255, 255}, 235, 128, 128},
		{[3]byte{0, 0, 255}, 82, 90, 240},  // red
		{[3]byte{0, 255, 0}, 144, 54, 34},  // green
		{[3]byte{255, 0, 0}, 41, 240, 110}, // blue
	} {
		f := yuv.BGRX{Pix: bytes.Repeat([]byte{c.bgr[0], c.bgr[1], c.bgr[2], 0}, 4), Stride: 8, Width: 2, Height: 2}
		img := yuv.New(2, 2)
		if err := yuv.Convert(img, f, nil); err != nil {
			t.Fatal(err)
		}
		if img.Y[0] != c.y || img.U[0] != c.u || img.V[0] != c.v {
			t.Errorf("BGR %v: YUV %d %d %d, want %d %d %d", c.bgr, img.Y[0], img.U[0], img.V[0], c.y, c.u, c.v)
		}
	}
}

// checkIncremental changes the pixels of rects in a converted frame,
// converts only those rects, and requires the image to equal a whole
// conversion of the changed frame: nothing a change touches is left stale.
func checkIncremental(t *testing.T, f yuv.BGRX, rects []image.Rectangle, paint byte) {
	t.Helper()
	img := yuv.New(f.Width, f.Height)
	if err := yuv.Convert(img, f, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range rects {
		r = r.Intersect(image.Rect(0, 0, f.Width, f.Height))
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				p := f.Pix[y*f.Stride+x*4:]
				p[0], p[1], p[2] = paint, ^paint, paint^0x5a
			}
		}
	}
	if err := yuv.Convert(img, f, rects); err != nil {
		t.Fatal(err)
	}
	whole := yuv.New(f.Width, f.Height)
	if err := yuv.Convert(whole, f, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(img.Y, whole.Y) || !bytes.Equal(img.U, whole.U) || !bytes.Equal(img.V, whole.V) {
		t.Fatalf("%dx%d: converting the changed rects %v differs from converting the whole frame", f.Width, f.Height, rects)
	}
}

// TestChangedRectsOnly: odd rectangles, overlapping ones, ones past the
// edge, and enough area to be split across the cores.
func TestChangedRectsOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		w, h  int
		rects []image.Rectangle
	}{
		{7, 5, []image.Rectangle{image.Rect(1, 1, 2, 2)}},
		{7, 5, []image.Rectangle{image.Rect(6, 4, 7, 5), image.Rect(-3, -3, 1, 1)}},
		{64, 48, []image.Rectangle{image.Rect(3, 3, 9, 9), image.Rect(8, 8, 20, 21), image.Rect(60, 0, 90, 47)}},
		{1920, 1080, []image.Rectangle{image.Rect(11, 13, 1500, 901), image.Rect(1499, 899, 1920, 1080)}},
		{1921, 1081, []image.Rectangle{image.Rect(0, 0, 1921, 1081)}},
	} {
		checkIncremental(t, randomFrame(rng, c.w, c.h), c.rects, byte(rng.Uint32()))
	}
}

func TestRefusesMismatchedSizes(t *testing.T) {
	f := yuv.BGRX{Pix: make([]byte, 16), Stride: 8, Width: 2, Height: 2}
	if err := yuv.Convert(yuv.New(4, 2), f, nil); err == nil {
		t.Fatal("a 4x2 image took a 2x2 frame")
	}
	short := yuv.BGRX{Pix: make([]byte, 15), Stride: 8, Width: 2, Height: 2}
	if err := yuv.Convert(yuv.New(2, 2), short, nil); err == nil {
		t.Fatal("a frame shorter than its size was converted")
	}
}

// FuzzConvert: any size and rectangles (from the input) convert without a
// panic, to the bytes of the pure Go loop, and converting the changed
// rectangles equals a whole conversion.
func FuzzConvert(f *testing.F) {
	f.Add(uint8(1), uint8(1), []byte{0, 0, 1, 1}, uint8(7))
	f.Add(uint8(9), uint8(7), []byte{1, 1, 3, 3, 2, 2, 9, 7}, uint8(200))
	f.Add(uint8(40), uint8(3), []byte{255, 0, 0, 255}, uint8(0))
	f.Fuzz(func(t *testing.T, w, h uint8, coords []byte, paint uint8) {
		width, height := int(w)%80+1, int(h)%80+1
		rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
		var rects []image.Rectangle
		for i := 0; i+4 <= len(coords) && len(rects) < 16; i += 4 {
			rects = append(rects, image.Rect(int(int8(coords[i])), int(int8(coords[i+1])), int(coords[i+2]), int(coords[i+3])))
		}
		frame := randomFrame(rng, width, height)
		checkSameAsPortable(t, frame, rects)
		checkIncremental(t, frame, rects, paint)
	})
}

// BenchmarkConvert1080p: a whole 1920x1080 frame, by Convert (the vector
// loop where there is one) and by the pure Go loop, in the same run.
func BenchmarkConvert1080p(b *testing.B) {
	for _, c := range []struct {
		name    string
		convert func(*yuv.Image, yuv.BGRX, []image.Rectangle) error
	}{{"Convert", yuv.Convert}, {"Portable", yuv.ConvertPortable}} {
		b.Run(c.name, func(b *testing.B) {
			f := randomFrame(rand.New(rand.NewPCG(5, 6)), 1920, 1080)
			img := yuv.New(1920, 1080)
			b.SetBytes(1920 * 1080 * 4)
			for b.Loop() {
				if err := c.convert(img, f, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// checkSameAsPortable requires Convert (the vector loop, where the build
// and CPU have it) to give the bytes of the pure Go loop, for the whole
// frame and for rects.
func checkSameAsPortable(t *testing.T, f yuv.BGRX, rects []image.Rectangle) {
	t.Helper()
	fast, slow := yuv.New(f.Width, f.Height), yuv.New(f.Width, f.Height)
	for _, rs := range [][]image.Rectangle{nil, rects} {
		if err := yuv.Convert(fast, f, rs); err != nil {
			t.Fatal(err)
		}
		if err := yuv.ConvertPortable(slow, f, rs); err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			name string
			a, b []byte
		}{{"Y", fast.Y, slow.Y}, {"U", fast.U, slow.U}, {"V", fast.V, slow.V}} {
			if i := firstDiff(p.a, p.b); i >= 0 {
				t.Fatalf("%dx%d rects %v: %s[%d] = %d, the pure Go loop says %d", f.Width, f.Height, rs, p.name, i, p.a[i], p.b[i])
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestVectorLoopMatchesPortable: every size from 1 to 70 columns (the
// vector loop takes 32 at a time, then pairs, then an odd column), odd
// heights, padded strides, and random rects, byte for byte.
func TestVectorLoopMatchesPortable(t *testing.T) {
	if !yuv.Accelerated {
		t.Skip("no vector loop in this build or on this CPU: Convert is the pure Go loop")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for w := 1; w <= 70; w++ {
		for _, h := range []int{1, 2, 3, 8} {
			checkSameAsPortable(t, randomFrame(rng, w, h), []image.Rectangle{image.Rect(rng.IntN(w), rng.IntN(h), rng.IntN(w+1), rng.IntN(h+1))})
		}
	}
	// Extremes of every channel, where a wrapped or saturated lane shows.
	f := randomFrame(rng, 64, 4)
	for i := range f.Pix {
		f.Pix[i] = []byte{0, 255}[rng.IntN(2)]
	}
	checkSameAsPortable(t, f, nil)
	checkSameAsPortable(t, randomFrame(rng, 1920, 1080), []image.Rectangle{image.Rect(33, 7, 1001, 999)})
}
