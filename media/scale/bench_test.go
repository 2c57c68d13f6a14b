package scale_test

import (
	"testing"

	"github.com/trycua/cua-spacesd/media/scale"
	"github.com/trycua/cua-spacesd/media/scale/scaletest"
)

// BenchmarkScale1080p shrinks a 1920x1080 BGRX frame to 1280x720, as an
// agent's screenshot is, to BGRX (for JPEG) and RGBA (for PNG), on every
// core and on one.
func BenchmarkScale1080p(b *testing.B) {
	const w, h = 1920, 1080
	src := scale.Frame{Pix: scaletest.Pattern(w, h, w*4, 1, 0), Stride: w * 4, Width: w, Height: h}
	r := scale.Fit(w, h, 1280)
	ow, oh := r.Size(w, h)
	var s scale.Scaler
	for _, to := range []scale.Format{scale.BGRX, scale.RGBA} {
		b.Run(to.String(), func(b *testing.B) {
			dst := scale.Frame{Pix: make([]byte, ow*oh*4), Stride: ow * 4, Width: ow, Height: oh}
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Scale(dst, to, src, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}
