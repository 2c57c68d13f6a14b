package a11y_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/a11y"
	"github.com/trycua/cua-spacesd/capabilities/a11y/a11ytest"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
)

// BenchmarkTree1000: the tree of a window with 1,000 buttons more, and the
// size of its JSON answer, beside a screenshot of the same window (PNG and
// JPEG) in the same run: what an agent pays for the widgets against what
// it pays for the pixels.
func BenchmarkTree1000(b *testing.B) {
	env := a11ytest.Start(b, a11ytest.Options{})
	app := env.StartAppWith(b, a11ytest.AppOptions{Buttons: 1000})
	a := a11y.New(a11y.Options{Display: env.Display})
	defer a.Close()
	d := desktop.New(desktop.Options{Display: env.Display, Logger: slog.New(slog.DiscardHandler)})
	defer d.Close()
	var size, nodes int
	var took time.Duration
	for b.Loop() {
		t0 := time.Now()
		tr, err := a.Tree(b.Context(), api.A11yTreeRequest{WindowID: app.WindowID, IncludeHidden: true})
		if err != nil {
			b.Fatal(err)
		}
		js, _ := json.Marshal(tr)
		took += time.Since(t0)
		size, nodes = len(js), len(tr.Nodes)
		if tr.Truncated {
			b.Fatalf("truncated at %d nodes", nodes)
		}
	}
	per := took / time.Duration(max(b.N, 1))
	fmt.Printf("a11y: the tree of a window of %d nodes: %.0f ms, %d KB of JSON (mean of %d)\n", nodes, float64(per.Microseconds())/1000, size/1024, b.N)
	for _, format := range []string{api.FormatPNG, api.FormatJPEG} {
		const shots = 5
		var img []byte
		t0 := time.Now()
		for range shots {
			var err error
			if img, _, err = d.Screenshot(b.Context(), api.ScreenshotRequest{WindowID: app.WindowID, Format: format}); err != nil {
				b.Fatal(err)
			}
		}
		fmt.Printf("a11y: beside it, a %s screenshot of the same window: %.0f ms, %d KB (mean of %d)\n", format, float64((time.Since(t0)/shots).Microseconds())/1000, len(img)/1024, shots)
	}
	b.ReportMetric(float64(nodes), "nodes")
	b.ReportMetric(float64(size), "json-bytes")
}
