package jpegenc_test

import (
	"bytes"
	"errors"
	"image"
	"image/draw"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/media/jpegenc"
)

// testFrame draws a natural-ish picture: smooth gradients, a few hard
// edges (rectangles, like windows), text-like thin strokes and a little
// noise, so every frequency band of the DCT carries something.
func testFrame(w, h int, seed uint64) *image.RGBA {
	rng := rand.New(rand.NewPCG(seed, 1))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	type rect struct {
		x0, y0, x1, y1 int
		r, g, b        uint8
	}
	rects := make([]rect, 6)
	for i := range rects {
		x0, y0 := rng.IntN(w), rng.IntN(h)
		rects[i] = rect{x0, y0, x0 + 1 + rng.IntN(w/2+1), y0 + 1 + rng.IntN(h/2+1), uint8(rng.Uint32()), uint8(rng.Uint32()), uint8(rng.Uint32())}
	}
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(max(w, 1)), float64(y)/float64(max(h, 1))
			r := 127 + 100*math.Sin(6*fx+2*fy)
			g := 255 * fy
			b := 127 + 90*math.Cos(9*fx*fy)
			for _, q := range rects {
				if x >= q.x0 && x < q.x1 && y >= q.y0 && y < q.y1 {
					r, g, b = float64(q.r), float64(q.g), float64(q.b)
					// text-like strokes inside windows
					if (y-q.y0)%12 < 8 && (x-q.x0)%7 < 2 && (x-q.x0)%50 < 40 {
						r, g, b = r/4, g/4, b/4
					}
				}
			}
			n := rng.NormFloat64() * 3
			i := img.PixOffset(x, y)
			img.Pix[i+0] = clamp8(r + n)
			img.Pix[i+1] = clamp8(g + n)
			img.Pix[i+2] = clamp8(b + n)
			img.Pix[i+3] = 0xff
		}
	}
	return img
}

func clamp8(v float64) uint8 { return uint8(min(max(math.Round(v), 0), 255)) }

func rgbaImage(m *image.RGBA) jpegenc.Image {
	return jpegenc.Image{Pix: m.Pix, Stride: m.Stride, Width: m.Rect.Dx(), Height: m.Rect.Dy(), Format: jpegenc.RGBA}
}

// bgrx returns m's pixels in the X server's byte order.
func bgrx(m *image.RGBA) jpegenc.Image {
	p := make([]byte, len(m.Pix))
	for i := 0; i < len(p); i += 4 {
		p[i], p[i+1], p[i+2], p[i+3] = m.Pix[i+2], m.Pix[i+1], m.Pix[i], 0
	}
	return jpegenc.Image{Pix: p, Stride: m.Stride, Width: m.Rect.Dx(), Height: m.Rect.Dy(), Format: jpegenc.BGRX}
}

// psnr compares the RGB of a decoded image with the source, in dB.
func psnr(t *testing.T, src *image.RGBA, got image.Image) float64 {
	t.Helper()
	if got.Bounds().Size() != src.Bounds().Size() {
		t.Fatalf("decoded image is %v, want %v", got.Bounds().Size(), src.Bounds().Size())
	}
	rgb := image.NewRGBA(src.Rect)
	draw.Draw(rgb, rgb.Rect, got, got.Bounds().Min, draw.Src)
	var se float64
	for i, v := range rgb.Pix {
		if i%4 != 3 {
			d := float64(v) - float64(src.Pix[i])
			se += d * d
		}
	}
	mse := se / float64(3*src.Rect.Dx()*src.Rect.Dy())
	if mse == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/mse)
}

func decode(t testing.TB, b []byte) image.Image {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("image/jpeg cannot decode the output: %v", err)
	}
	return img
}

func TestQualityPSNR(t *testing.T) {
	src := testFrame(640, 480, 1)
	var enc jpegenc.Encoder
	for _, tc := range []struct {
		quality int
		minDB   float64
	}{
		// The ceiling near 33 dB is 4:2:0's: the frame's coloured strokes
		// and noise are finer than half-resolution chroma.
		{10, 25},
		{50, 29},
		{80, 30},
		{90, 31},
		{100, 32},
	} {
		want := refPSNR(t, src, tc.quality)
		for _, bands := range []int{1, 3, 0} {
			for _, in := range []jpegenc.Image{rgbaImage(src), bgrx(src)} {
				b, err := enc.Append(nil, in, jpegenc.Options{Quality: tc.quality, Bands: bands})
				if err != nil {
					t.Fatal(err)
				}
				got := psnr(t, src, decode(t, b))
				t.Logf("quality %d bands %d format %d: %.2f dB in %d bytes (image/jpeg %.2f dB)",
					tc.quality, bands, in.Format, got, len(b), want)
				if got < tc.minDB || got < want-0.5 {
					t.Errorf("quality %d bands %d format %d: PSNR %.2f dB, want >= %.1f and >= image/jpeg's %.2f - 0.5",
						tc.quality, bands, in.Format, got, tc.minDB, want)
				}
			}
		}
	}
}

// refPSNR is image/jpeg's PSNR on src at quality: the yardstick ours may
// not fall noticeably below.
func refPSNR(t *testing.T, src *image.RGBA, quality int) float64 {
	t.Helper()
	var ref bytes.Buffer
	if err := jpeg.Encode(&ref, src, &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return psnr(t, src, decode(t, ref.Bytes()))
}

// TestGreyPrecision isolates the transform and quantiser from chroma
// subsampling: a grey frame at quality 100 (every step 1) must come back
// nearly exact, which a DCT with too little fixed-point precision fails.
func TestGreyPrecision(t *testing.T) {
	src := testFrame(320, 240, 5)
	for i := 0; i < len(src.Pix); i += 4 {
		y := uint8((int(src.Pix[i]) + 2*int(src.Pix[i+1]) + int(src.Pix[i+2])) / 4)
		src.Pix[i], src.Pix[i+1], src.Pix[i+2] = y, y, y
	}
	var enc jpegenc.Encoder
	for _, tc := range []struct {
		quality int
		minDB   float64
	}{{100, 45}, {90, 38}, {80, 35}} {
		b, err := enc.Append(nil, rgbaImage(src), jpegenc.Options{Quality: tc.quality})
		if err != nil {
			t.Fatal(err)
		}
		got, want := psnr(t, src, decode(t, b)), refPSNR(t, src, tc.quality)
		t.Logf("grey quality %d: %.2f dB (image/jpeg %.2f dB)", tc.quality, got, want)
		if got < tc.minDB || got < want-0.5 {
			t.Errorf("grey quality %d: PSNR %.2f dB, want >= %.1f and >= image/jpeg's %.2f - 0.5", tc.quality, got, tc.minDB, want)
		}
	}
}

func TestSizes(t *testing.T) {
	var enc jpegenc.Encoder
	for _, sz := range []image.Point{{1, 1}, {2, 2}, {7, 3}, {8, 8}, {16, 16}, {17, 9}, {15, 33}, {33, 1}, {1, 40}, {1921, 1081}} {
		src := testFrame(sz.X, sz.Y, uint64(sz.X*sz.Y))
		want := refPSNR(t, src, 90)
		for _, bands := range []int{1, 4, 0} {
			b, err := enc.Append(nil, rgbaImage(src), jpegenc.Options{Quality: 90, Bands: bands})
			if err != nil {
				t.Fatalf("%v bands %d: %v", sz, bands, err)
			}
			got := decode(t, b)
			if got.Bounds() != src.Bounds() {
				t.Fatalf("%v bands %d: decoded bounds %v", sz, bands, got.Bounds())
			}
			// Edge replication keeps partial blocks as good as whole ones.
			if p := psnr(t, src, got); p < want-1 {
				t.Errorf("%v bands %d: PSNR %.2f dB, image/jpeg %.2f dB", sz, bands, p, want)
			}
		}
	}
}

// TestFlatColours checks exact colours at the edges of odd sizes: a flat
// frame must decode to its colour at every pixel, the replicated edge
// included.
func TestFlatColours(t *testing.T) {
	var enc jpegenc.Encoder
	for _, c := range [][3]uint8{{0, 0, 0}, {255, 255, 255}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {30, 140, 200}} {
		src := image.NewRGBA(image.Rect(0, 0, 17, 9))
		for i := 0; i < len(src.Pix); i += 4 {
			src.Pix[i], src.Pix[i+1], src.Pix[i+2], src.Pix[i+3] = c[0], c[1], c[2], 255
		}
		b, err := enc.Append(nil, rgbaImage(src), jpegenc.Options{Quality: 90})
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, b)
		for y := range 9 {
			for x := range 17 {
				r, g, bl, _ := got.At(x, y).RGBA()
				for i, v := range [3]uint32{r >> 8, g >> 8, bl >> 8} {
					if d := int(v) - int(c[i]); d > 3 || d < -3 {
						t.Fatalf("colour %v: pixel (%d,%d) decodes as %v", c, x, y, [3]uint32{r >> 8, g >> 8, bl >> 8})
					}
				}
			}
		}
	}
}

// TestRestartMarkers parses the file's markers: one DRI whose interval
// is a whole number of MCU rows, RST0..RST7 in cycle between bands, only
// stuffed 0xFF bytes inside the entropy-coded data, and EOI last. Bands
// change the coding, never the picture: every split decodes to exactly
// the pixels of the one-band file.
func TestRestartMarkers(t *testing.T) {
	var enc jpegenc.Encoder
	const w, h, mcuCols, mcuRows = 200, 170, 13, 11
	src := testFrame(w, h, 7)
	one, err := enc.Append(nil, rgbaImage(src), jpegenc.Options{Quality: 80, Bands: 1})
	if err != nil {
		t.Fatal(err)
	}
	whole := decode(t, one).(*image.YCbCr)
	for _, bands := range []int{1, 2, 3, 11, 20} {
		b, err := enc.Append(nil, rgbaImage(src), jpegenc.Options{Quality: 80, Bands: bands})
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, b).(*image.YCbCr)
		if !bytes.Equal(got.Y, whole.Y) || !bytes.Equal(got.Cb, whole.Cb) || !bytes.Equal(got.Cr, whole.Cr) {
			t.Errorf("bands %d: decodes to other pixels than one band", bands)
		}

		dri, i := 0, 2
		for b[i+1] != 0xda { // marker segments up to SOS
			if b[i] != 0xff {
				t.Fatalf("bands %d: byte %d is %#x, want a marker", bands, i, b[i])
			}
			if b[i+1] == 0xdd {
				dri = int(b[i+4])<<8 | int(b[i+5])
			}
			i += 2 + (int(b[i+2])<<8 | int(b[i+3]))
		}
		i += 2 + (int(b[i+2])<<8 | int(b[i+3]))
		var rsts []int
		for ; ; i++ {
			if b[i] != 0xff {
				continue
			}
			i++
			if b[i] == 0 {
				continue // stuffed data byte
			}
			if b[i] >= 0xd0 && b[i] <= 0xd7 {
				rsts = append(rsts, int(b[i]-0xd0))
				continue
			}
			if b[i] != 0xd9 || i != len(b)-1 {
				t.Fatalf("bands %d: marker %#x at %d of %d inside the scan", bands, b[i], i-1, len(b))
			}
			break
		}

		rowsPerBand := (mcuRows + bands - 1) / bands
		nb := (mcuRows + rowsPerBand - 1) / rowsPerBand
		wantDRI := rowsPerBand * mcuCols
		if nb == 1 {
			wantDRI = 0 // one band: no restart interval at all
		}
		if dri != wantDRI {
			t.Errorf("bands %d: DRI %d, want %d", bands, dri, wantDRI)
		}
		if len(rsts) != nb-1 {
			t.Fatalf("bands %d: %d restart markers, want %d", bands, len(rsts), nb-1)
		}
		for i, r := range rsts {
			if r != i%8 {
				t.Errorf("bands %d: restart marker %d is RST%d, want RST%d", bands, i, r, i%8)
			}
		}
	}
}

func TestInvalid(t *testing.T) {
	var enc jpegenc.Encoder
	ok := rgbaImage(testFrame(4, 4, 1))
	for _, tc := range []struct {
		name string
		img  jpegenc.Image
		o    jpegenc.Options
	}{
		{"quality -1", ok, jpegenc.Options{Quality: -1}},
		{"quality 101", ok, jpegenc.Options{Quality: 101}},
		{"negative bands", ok, jpegenc.Options{Bands: -2}},
		{"empty", jpegenc.Image{Stride: 0}, jpegenc.Options{}},
		{"too wide", jpegenc.Image{Width: 70000, Height: 1, Stride: 280000, Pix: make([]byte, 280000)}, jpegenc.Options{}},
		{"short stride", jpegenc.Image{Pix: ok.Pix, Stride: 8, Width: 4, Height: 4}, jpegenc.Options{}},
		{"short pixels", jpegenc.Image{Pix: ok.Pix[:60], Stride: 16, Width: 4, Height: 4}, jpegenc.Options{}},
		{"huge stride", jpegenc.Image{Pix: ok.Pix, Stride: 1 << 62, Width: 4, Height: 4}, jpegenc.Options{}},
		{"format", jpegenc.Image{Pix: ok.Pix, Stride: 16, Width: 4, Height: 4, Format: 9}, jpegenc.Options{}},
	} {
		_, err := enc.Append(nil, tc.img, tc.o)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Kind != api.KindInvalidArgument {
			t.Errorf("%s: err %v, want invalid_argument", tc.name, err)
		}
	}
	// Quality 0 is the default, and the bounds themselves are valid.
	for _, q := range []int{0, jpegenc.MinQuality, jpegenc.MaxQuality} {
		if _, err := enc.Append(nil, ok, jpegenc.Options{Quality: q}); err != nil {
			t.Errorf("quality %d: %v", q, err)
		}
	}
}

// TestAppend keeps the bytes already in dst and encodes the same either way.
func TestAppend(t *testing.T) {
	var enc jpegenc.Encoder
	img := rgbaImage(testFrame(50, 40, 3))
	a, err := enc.Append(nil, img, jpegenc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := enc.Append([]byte("prefix"), img, jpegenc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:6]) != "prefix" || !bytes.Equal(a, b[6:]) {
		t.Fatal("Append with a prefix differs from Append(nil)")
	}
	var w bytes.Buffer
	if err := enc.Encode(&w, img, jpegenc.Options{}); err != nil || !bytes.Equal(w.Bytes(), a) {
		t.Fatalf("Encode differs from Append (err %v)", err)
	}
}

// TestExtremes codes the patterns with the largest DCT coefficients
// (each block's pixels at 0 or 255 following the signs of a basis
// function) and saturated colours at the quality bounds, where the
// quantised values come closest to what the Huffman tables can code.
func TestExtremes(t *testing.T) {
	var enc jpegenc.Encoder
	const size = 64
	patterns := map[string]func(x, y int) [3]uint8{
		"checkerboard": func(x, y int) [3]uint8 {
			v := uint8((x + y) % 2 * 255)
			return [3]uint8{v, v, v}
		},
		"basis": func(x, y int) [3]uint8 {
			u, v := x/8%8, y/8%8 // each block a different basis function
			cx := math.Cos(float64(2*(x%8)+1) * float64(u) * math.Pi / 16)
			cy := math.Cos(float64(2*(y%8)+1) * float64(v) * math.Pi / 16)
			p := uint8(0)
			if cx*cy >= 0 {
				p = 255
			}
			return [3]uint8{p, 255 - p, p}
		},
		"saturated": func(x, y int) [3]uint8 {
			return [...][3]uint8{{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 0}}[(x/3+y/5)%4]
		},
	}
	for name, f := range patterns {
		src := image.NewRGBA(image.Rect(0, 0, size, size))
		for y := range size {
			for x := range size {
				c := f(x, y)
				i := src.PixOffset(x, y)
				src.Pix[i], src.Pix[i+1], src.Pix[i+2], src.Pix[i+3] = c[0], c[1], c[2], 255
			}
		}
		for _, q := range []int{jpegenc.MinQuality, 50, jpegenc.MaxQuality} {
			b, err := enc.Append(nil, rgbaImage(src), jpegenc.Options{Quality: q})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := psnr(t, src, decode(t, b)), refPSNR(t, src, q); got < want-0.5 {
				t.Errorf("%s quality %d: PSNR %.2f dB, image/jpeg %.2f dB", name, q, got, want)
			}
		}
	}
}
