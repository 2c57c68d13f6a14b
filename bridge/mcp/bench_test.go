package mcp_test

import (
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/scale/scaletest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// BenchmarkMCPSpaceBashTrue is one tools/call space_bash "true" through the
// bridge over streamable HTTP (official SDK client) to a real spacesd on
// loopback. It reports the median besides the mean.
func BenchmarkMCPSpaceBashTrue(b *testing.B) {
	e := newEnv(b)
	cs := e.client(b, nil)
	args := map[string]any{"space": "s1", "command": "true"}
	for range 5 { // warm connections and the capabilities cache
		call(b, cs, "space_bash", args)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		r := call(b, cs, "space_bash", args)
		durs = append(durs, time.Since(start))
		if r.IsError {
			b.Fatal(text(r))
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	if len(durs) > 0 {
		b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
	}
}

// BenchmarkMCPCallToolHop is space_bash "true" through the bridge two
// ways in one run: as the bridge's own tool (its client to the daemon's
// HTTP API), and as call_tool of the daemon's built-in service (one more
// MCP hop, bridge to the daemon's /mcp, a session of its own per call),
// with the official SDK client over streamable HTTP. It reports medians.
func BenchmarkMCPCallToolHop(b *testing.B) {
	e := newEnv(b)
	cs := e.client(b, nil)
	for _, c := range []struct {
		name, tool string
		args       map[string]any
	}{
		{"space_bash", "space_bash", map[string]any{"space": "s1", "command": "true"}},
		{"call_tool", "call_tool", map[string]any{"space": "s1", "tool": "space_bash", "arguments": map[string]any{"command": "true"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range 5 { // warm connections and the capabilities cache
				call(b, cs, c.tool, c.args)
			}
			durs := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				r := call(b, cs, c.tool, c.args)
				durs = append(durs, time.Since(start))
				if r.IsError {
					b.Fatal(text(r))
				}
			}
			slices.Sort(durs)
			if len(durs) > 0 {
				b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
			}
		})
	}
}

// BenchmarkMCPAgentStep is a computer-use agent's step through the bridge
// to a real spacesd on a 1920x1080 Xvfb showing a desktop-like picture: a
// JPEG screenshot scaled to 1280 (as agents ask), then a click at its
// scaled coordinates. Beside it in the same run: each half alone, and a
// bare space_bash "true" (the bridge's floor), over stdio (as agent hosts
// run the bridge) and streamable HTTP, with the official SDK client. It
// reports the median besides the mean; the answers are not checked
// against their schemas here (the tests do), so that only the bridge's
// work is timed.
func BenchmarkMCPAgentStep(b *testing.B) {
	display := desktoptest.Start(b, desktoptest.Options{Size: "1920x1080", NoWindowManager: true})
	desktoptest.PaintRoot(b, display, scaletest.Desktop(1920, 1080, 1920*4, 0), 1920, 1080)
	e := newEnvWith(b, envOptions{daemon: spacesdtest.Options{Display: display}})
	shot := map[string]any{"space": "s1", "format": "jpeg", "max_dimension": 1280}
	for _, transport := range []string{"stdio", "http"} {
		var cs *sdk.ClientSession
		if transport == "stdio" {
			cs = e.stdioClient(b)
		} else {
			cs = e.client(b, nil)
		}
		var scale float64
		steps := []struct {
			name string
			run  func(b *testing.B)
		}{
			{"step", func(b *testing.B) {
				scale = screenshot(b, cs, shot)
				mustCall(b, cs, "space_click", map[string]any{"space": "s1", "x": 640, "y": 360, "scale": scale})
			}},
			{"screenshot", func(b *testing.B) { screenshot(b, cs, shot) }},
			{"click", func(b *testing.B) {
				mustCall(b, cs, "space_click", map[string]any{"space": "s1", "x": 640, "y": 360, "scale": 2.0 / 3})
			}},
			{"bash-true", func(b *testing.B) { mustCall(b, cs, "space_bash", map[string]any{"space": "s1", "command": "true"}) }},
		}
		for _, s := range steps {
			b.Run(transport+"/"+s.name, func(b *testing.B) {
				for range 3 { // warm connections, pools and the capabilities cache
					s.run(b)
				}
				durs := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for b.Loop() {
					start := time.Now()
					s.run(b)
					durs = append(durs, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(durs)
				if len(durs) > 0 {
					b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
				}
			})
		}
	}
}

// screenshot calls space_screenshot and returns the scale it answered.
func screenshot(b *testing.B, cs *sdk.ClientSession, args map[string]any) float64 {
	r := mustCall(b, cs, "space_screenshot", args)
	if len(r.Content) == 0 {
		b.Fatal("screenshot answered no content")
	}
	img, ok := r.Content[0].(*sdk.ImageContent)
	if !ok || len(img.Data) == 0 {
		b.Fatalf("screenshot answered %T first", r.Content[0])
	}
	var info struct{ Scale float64 }
	structured(b, r, &info)
	return info.Scale
}

// mustCall calls a tool and fails on any error, unchecked otherwise.
func mustCall(b *testing.B, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	r, err := cs.CallTool(b.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	if r.IsError {
		b.Fatalf("%s: %s", name, text(r))
	}
	return r
}
