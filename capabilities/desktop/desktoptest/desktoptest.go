// Package desktoptest starts a private virtual X display (Xvfb, and openbox
// unless asked not to) for a test and stops it when the test ends.
package desktoptest

import (
	"context"
	"os/exec"
	"testing"

	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/internal/testenv"
)

// Options adjust the display.
type Options struct {
	// Size is "WIDTHxHEIGHT"; "" = 1920x1080.
	Size string
	// NoWindowManager leaves the display without openbox.
	NoWindowManager bool
	// NoComposite starts the display without the Composite extension.
	NoComposite bool
	// NoDamage starts the display without the DAMAGE extension.
	NoDamage bool
	// Xauthority, when set, is the file of cookies the X server requires
	// (Xvfb -auth); see desktop.VirtualOptions.
	Xauthority string
}

// Start starts the display and returns its name (":N"). Without Xvfb the
// test is skipped, or fails when CI=true: CI must run the desktop tests.
func Start(t testing.TB, opts Options) string {
	t.Helper()
	return StartVirtual(t, opts).Display()
}

// StartVirtual is Start answering the display's handle, for tests that
// freeze the X server.
func StartVirtual(t testing.TB, opts Options) *desktop.Virtual {
	t.Helper()
	Require(t)
	v, err := desktop.StartVirtual(context.Background(), desktop.VirtualOptions{
		Size: opts.Size, NoWindowManager: opts.NoWindowManager, NoComposite: opts.NoComposite, NoDamage: opts.NoDamage, Xauthority: opts.Xauthority,
	})
	if err != nil {
		t.Fatalf("start virtual display: %v", err)
	}
	t.Cleanup(v.Close)
	return v
}

// Require skips the test (fails it under CI=true) when Xvfb or openbox is
// missing.
func Require(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range append([]string{"Xvfb", "openbox"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "%s is not installed (the desktop tests need it)", tool)
		}
	}
}
