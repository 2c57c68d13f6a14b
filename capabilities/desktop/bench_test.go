package desktop_test

import (
	"context"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// BenchmarkScreenshot measures a whole 1920x1080 screenshot (capture,
// conversion, encoding) in the capability, without HTTP.
func BenchmarkScreenshot(b *testing.B) {
	display := desktoptest.Start(b, desktoptest.Options{Size: "1920x1080"})
	d := desktop.New(desktop.Options{Display: display})
	b.Cleanup(d.Close)
	ctx := context.Background()
	for _, format := range []string{api.FormatJPEG, api.FormatPNG} {
		b.Run(format, func(b *testing.B) {
			var size int
			for b.Loop() {
				img, _, err := d.Screenshot(ctx, api.ScreenshotRequest{Format: format})
				if err != nil {
					b.Fatal(err)
				}
				size = len(img)
			}
			b.ReportMetric(float64(size), "bytes")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
		})
	}
	b.Run("capture", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := d.Capture(ctx, 0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
	// The capture seam of a stream: a whole BGRX frame (a keyframe) into
	// the Capturer's own buffer, no conversion, no allocation of pixels.
	b.Run("frame", func(b *testing.B) {
		c := d.NewCapturer(0)
		defer c.Close()
		for b.Loop() {
			c.RequestFull()
			if _, err := c.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
}

// BenchmarkInputLatency measures the time from a click call to the
// ButtonPress received by a test X client.
func BenchmarkInputLatency(b *testing.B) {
	display := desktoptest.Start(b, desktoptest.Options{})
	d := desktop.New(desktop.Options{Display: display})
	b.Cleanup(d.Close)
	ctx := context.Background()
	if _, err := d.Windows(ctx, ""); err != nil { // connect before the client (see desktopDaemon)
		b.Fatal(err)
	}
	xc := desktoptest.NewXClient(b, display, "latency", 300, 300, nil)
	var win api.Window
	for win.WindowID == 0 {
		ws, _ := d.Windows(ctx, "latency")
		if len(ws) == 1 && ws[0].OnScreen {
			win = ws[0]
		}
	}
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := d.Click(ctx, api.ClickRequest{X: 10, Y: 10, Pointer: api.Pointer{WindowID: win.WindowID}}); err != nil {
			b.Fatal(err)
		}
		desktoptest.Next[xproto.ButtonPressEvent](b, xc, 10*time.Second)
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
}
