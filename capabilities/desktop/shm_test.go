package desktop_test

import (
	"context"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// TestCancelledCapturesLetTheDisplayClose: screenshots whose context ends
// at any moment (a viewer that leaves mid-capture) leave the shared
// memory segment free, so that closing the Desktop returns.
func TestCancelledCapturesLetTheDisplayClose(t *testing.T) {
	v := desktoptest.StartVirtual(t, desktoptest.Options{Size: "320x240", NoWindowManager: true})
	d := desktop.New(desktop.Options{Display: v.Display()})
	if _, _, err := d.Screenshot(t.Context(), api.ScreenshotRequest{}); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		ctx, cancel := context.WithCancel(t.Context())
		if i%2 == 0 {
			cancel()
		} else {
			time.AfterFunc(time.Duration(i%7)*50*time.Microsecond, cancel)
		}
		_, _, _ = d.Screenshot(ctx, api.ScreenshotRequest{})
		cancel()
	}
	done := make(chan struct{})
	go func() { d.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(desktoptest.EventTimeout):
		t.Fatalf("closing the Desktop after cancelled captures did not return within %s: a capture that never ran kept the shared memory segment", desktoptest.EventTimeout)
	}
}
