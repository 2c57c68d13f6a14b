// Package vp8test holds what the tests of the VP8 encoder's users share,
// apart from the daemon, so that media/vp8's own tests may use it too.
package vp8test

import (
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
