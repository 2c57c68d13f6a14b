package desktop_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// TestHugeWindowScreenshot resizes a real window to the X protocol's
// largest size, 32767x32767, as any client may: its screenshot must answer
// limit_exceeded naming the size and the cap instead of allocating 4 GiB,
// and the next screenshot must still be served.
func TestHugeWindowScreenshot(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := context.Background()
	if _, err := d.Windows(ctx, ""); err != nil { // connect before the test client (see desktopDaemon)
		t.Fatal(err)
	}
	title := desktoptest.RandomWord(t)
	desktoptest.NewXClient(t, display, title, 200, 200, []desktoptest.Fill{desktoptest.Red, desktoptest.Green, desktoptest.Blue, desktoptest.White})
	var win api.Window
	desktoptest.Eventually(t, "window "+title+" listed", func() bool {
		ws, err := d.Windows(ctx, title)
		if err != nil || len(ws) != 1 || !ws[0].OnScreen {
			return false
		}
		win = ws[0]
		return true
	})
	side := 32767
	desktoptest.Eventually(t, "the window resized to 32767x32767", func() bool {
		w, err := d.SetWindowGeometry(ctx, win.WindowID, api.GeometryRequest{Width: &side, Height: &side})
		if err != nil {
			t.Fatalf("resize: %v", err)
		}
		win = w
		return int64(w.Bounds.Width)*int64(w.Bounds.Height) > desktop.MaxCapturePixels
	})
	for _, format := range []string{api.FormatPNG, api.FormatJPEG} {
		_, _, err := d.Screenshot(ctx, api.ScreenshotRequest{WindowID: win.WindowID, Format: format})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Kind != api.KindLimitExceeded {
			t.Fatalf("screenshot (%s) of a %dx%d window: want limit_exceeded, got %v", format, win.Bounds.Width, win.Bounds.Height, err)
		}
		if ae.Retryable {
			t.Errorf("limit_exceeded of a window too big says retryable: the same call can only fail again")
		}
		size := strings.Contains(ae.Message, "32767x32767") || strings.Contains(ae.Message, strconv.Itoa(win.Bounds.Width)+"x"+strconv.Itoa(win.Bounds.Height))
		if !size || !strings.Contains(ae.Message, strconv.Itoa(desktop.MaxCapturePixels)) {
			t.Errorf("limit_exceeded message %q names neither the size nor the cap", ae.Message)
		}
	}
	if _, info, err := d.Screenshot(ctx, api.ScreenshotRequest{}); err != nil || info.Width != 640 {
		t.Fatalf("screen screenshot after the refused one: %+v, %v", info, err)
	}
}
