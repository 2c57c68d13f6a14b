package compatsvc_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/scale/scaletest"
	"github.com/trycua/cua-spacesd/spacesd/server"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// BenchmarkBusVsAPI measures the computer-server bus beside the daemon's
// own API, on one daemon and one 1920x1080 display of a desktop-like
// picture, in one run: a run_command of true (the bus over its WebSocket)
// against POST /v1/exec of the same, and a full-size PNG screenshot (the
// bus answers it base64 inside JSON) against GET /v1/screenshot.
func BenchmarkBusVsAPI(b *testing.B) {
	display := desktoptest.Start(b, desktoptest.Options{Size: "1920x1080", NoWindowManager: true})
	desktoptest.PaintRoot(b, display, scaletest.Desktop(1920, 1080, 1920*4, 0), 1920, 1080)
	d := spacesdtest.Start(b, spacesdtest.Options{Display: display})
	bus := dialBus(b, wsURL(d), http.Header{server.HeaderAPIKey: {d.Token}})
	ctx := b.Context()
	for _, tc := range []struct {
		name string
		op   func()
	}{
		{"run_command/bus", func() { bus.ok("run_command", map[string]any{"command": "true"}) }},
		{"run_command/api", func() {
			if _, err := d.Client.Exec(ctx, api.ExecRequest{Command: api.Command{Shell: "true"}}); err != nil {
				b.Fatal(err)
			}
		}},
		{"screenshot_1080p_png/bus", func() { bus.ok("screenshot", nil) }},
		{"screenshot_1080p_png/api", func() {
			if _, _, err := d.Client.Screenshot(ctx, api.ScreenshotRequest{Format: api.FormatPNG}); err != nil {
				b.Fatal(err)
			}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tc.op() // warm the connection and the pools
			durs := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				tc.op()
				durs = append(durs, time.Since(start))
			}
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
		})
	}
}
