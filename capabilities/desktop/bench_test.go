package desktop_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/scale/scaletest"
)

// BenchmarkScreenshot measures a whole 1920x1080 screenshot (capture,
// scaling, encoding) in the capability, without HTTP, of a desktop-like
// picture (windows of text): full size, and scaled to 1280 as an
// agent asks, as JPEG and PNG; beside them, the raw captures they start from.
// Each reports its median besides the mean.
func BenchmarkScreenshot(b *testing.B) {
	display := desktoptest.Start(b, desktoptest.Options{Size: "1920x1080", NoWindowManager: true})
	desktoptest.PaintRoot(b, display, scaletest.Desktop(1920, 1080, 1920*4, 0), 1920, 1080)
	d := desktop.New(desktop.Options{Display: display})
	b.Cleanup(d.Close)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  api.ScreenshotRequest
	}{
		{"jpeg", api.ScreenshotRequest{Format: api.FormatJPEG}},
		{"jpeg-1280", api.ScreenshotRequest{Format: api.FormatJPEG, MaxDimension: 1280}},
		{"png", api.ScreenshotRequest{Format: api.FormatPNG}},
		{"png-1280", api.ScreenshotRequest{Format: api.FormatPNG, MaxDimension: 1280}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var size int
			timed(b, func() {
				img, _, err := d.Screenshot(ctx, tc.req)
				if err != nil {
					b.Fatal(err)
				}
				size = len(img)
			})
			b.ReportMetric(float64(size), "bytes")
		})
	}
	b.Run("capture", func(b *testing.B) {
		timed(b, func() {
			if _, _, err := d.Capture(ctx, 0); err != nil {
				b.Fatal(err)
			}
		})
	})
	// The capture seam of a stream: a whole BGRX frame (a keyframe) into
	// the Capturer's own buffer, no conversion, no allocation of pixels.
	b.Run("frame", func(b *testing.B) {
		c := d.NewCapturer(0)
		defer c.Close()
		timed(b, func() {
			c.RequestFull()
			if _, err := c.Next(ctx); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// timed runs op b.N times and reports the median and the mean in ms.
func timed(b *testing.B, op func()) {
	b.Helper()
	op() // warm the connection and the pools
	durs := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		op()
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durs)
	if len(durs) > 0 {
		b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
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
