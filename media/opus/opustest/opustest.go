// Package opustest holds what the tests of the Opus encoder's users share,
// apart from the daemon, so that media/opus's own tests may use it too.
package opustest

import (
	"testing"

	"github.com/trycua/cua-spacesd/internal/testenv"
	"github.com/trycua/cua-spacesd/media/opus"
)

// Require skips a test that needs the Opus encoder in a build without it
// (no cgo, or no libopus-dev), and fails it under CI=true, where the
// encoder is built and every test of the sound must run.
func Require(t testing.TB) {
	t.Helper()
	if !opus.Available {
		testenv.Missing(t, "this test binary has no Opus encoder (%s)", opus.Limitation)
	}
}
