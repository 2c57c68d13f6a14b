// Package vp8test holds what the tests of the VP8 encoder's users share,
// apart from the daemon, so that media/vp8's own tests may use it too.
package vp8test

import (
	"image"
	"testing"

	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/media/vp8"
)

// Require skips a test that needs the VP8 encoder in a build without it
// (no cgo, or no libvpx-dev), and fails it under CI=true, where the encoder
// is built and every test of the streams must run.
func Require(t testing.TB) {
	t.Helper()
	if !vp8.Available {
		testenv.Missing(t, "this test binary has no VP8 encoder (%s)", vp8.Limitation)
	}
}

// RGBAt is a decoded frame's pixel (x, y) as 0xRRGGBB: BT.601, limited
// range, as the encoder converts (media/yuv).
func RGBAt(img *image.YCbCr, x, y int) uint32 {
	yy := float64(img.Y[img.YOffset(x, y)]) - 16
	cb := float64(img.Cb[img.COffset(x, y)]) - 128
	cr := float64(img.Cr[img.COffset(x, y)]) - 128
	c := func(v float64) uint32 { return uint32(min(max(v, 0), 255) + 0.5) }
	return c(1.164*yy+1.596*cr)<<16 | c(1.164*yy-0.392*cb-0.813*cr)<<8 | c(1.164*yy+2.017*cb)
}
