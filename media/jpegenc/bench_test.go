package jpegenc_test

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"testing"

	"github.com/trycua/cua-spacesd/media/jpegenc"
)

// BenchmarkEncode1080p encodes a 1920x1080 frame at quality 80 with
// jpegenc (from RGBA and from the X server's BGRX) and, side by side on
// the same frame, with image/jpeg. "natural" has gradients and noise in
// every block; "screen" is flat windows with text-like strokes, as
// desktops mostly are.
func BenchmarkEncode1080p(b *testing.B) {
	const quality = 80
	frames := []struct {
		name string
		img  *image.RGBA
	}{{"natural", testFrame(1920, 1080, 42)}, {"screen", screenFrame(1920, 1080)}}
	report := func(b *testing.B, size int) {
		b.ReportMetric(float64(size), "bytes")
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	}
	for _, f := range frames {
		for _, tc := range []struct {
			name string
			img  jpegenc.Image
		}{{"jpegenc/rgba", rgbaImage(f.img)}, {"jpegenc/bgrx", bgrx(f.img)}} {
			b.Run(f.name+"/"+tc.name, func(b *testing.B) {
				var enc jpegenc.Encoder
				var out []byte
				b.ReportAllocs()
				for b.Loop() {
					var err error
					// Reuse the output as a caller streaming frames would.
					if out, err = enc.Append(out[:0], tc.img, jpegenc.Options{Quality: quality}); err != nil {
						b.Fatal(err)
					}
				}
				report(b, len(out))
			})
		}
		b.Run(f.name+"/image-jpeg/rgba", func(b *testing.B) {
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := jpeg.Encode(&buf, f.img, &jpeg.Options{Quality: quality}); err != nil {
					b.Fatal(err)
				}
			}
			report(b, buf.Len())
		})
	}
}

// screenFrame draws a desktop: a flat background, windows with title
// bars, and rows of text-like strokes inside them.
func screenFrame(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill := func(r image.Rectangle, c color.RGBA) {
		draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
	}
	fill(img.Rect, color.RGBA{0x2e, 0x34, 0x40, 0xff})
	for i, r := range []image.Rectangle{
		image.Rect(60, 40, 1100, 760), image.Rect(900, 300, 1860, 1040), image.Rect(200, 820, 700, 1060),
	} {
		fill(r, color.RGBA{0xfa, 0xfa, 0xfa, 0xff})
		fill(image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+28), color.RGBA{0x3b, 0x82, 0xf6 - uint8(40*i), 0xff})
		for y := r.Min.Y + 40; y+10 < r.Max.Y; y += 18 {
			for x := r.Min.X + 12; x+8 < r.Max.X-40; x += 9 {
				if (x*7+y*3)%11 < 8 { // a "glyph": a few dark strokes
					fill(image.Rect(x, y, x+2, y+10), color.RGBA{0x20, 0x20, 0x20, 0xff})
					fill(image.Rect(x+2, y+4, x+6, y+6), color.RGBA{0x20, 0x20, 0x20, 0xff})
				}
			}
		}
	}
	return img
}
