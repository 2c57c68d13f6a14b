package jpegenc_test

import (
	"bytes"
	"image/jpeg"
	"testing"

	"github.com/trycua/cua-spacesd/media/jpegenc"
)

// BenchmarkEncode1080p encodes one 1920x1080 frame at quality 80 with
// jpegenc (from RGBA and from the X server's BGRX) and, side by side on
// the same frame, with image/jpeg.
func BenchmarkEncode1080p(b *testing.B) {
	const quality = 80
	src := testFrame(1920, 1080, 42)
	report := func(b *testing.B, size int) {
		b.ReportMetric(float64(size), "bytes")
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	}
	for _, tc := range []struct {
		name string
		img  jpegenc.Image
	}{{"jpegenc/rgba", rgbaImage(src)}, {"jpegenc/bgrx", bgrx(src)}} {
		b.Run(tc.name, func(b *testing.B) {
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
	b.Run("image-jpeg/rgba", func(b *testing.B) {
		var buf bytes.Buffer
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := jpeg.Encode(&buf, src, &jpeg.Options{Quality: quality}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, buf.Len())
	})
}
