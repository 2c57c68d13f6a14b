package mcp_test

import (
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// The desktop tools keep no bounds of their own: the Space reports its
// limits in its capabilities and enforces them, and a value the bridge once
// refused by a stale copy (count 5 > 3, 150 wheel clicks > 100, an edge of
// 10000 > 8192) reaches the Space.
func TestDesktopLimitsAreTheSpaces(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480", NoWindowManager: true})
	e := newEnvWith(t, envOptions{daemon: spacesdtest.Options{Display: display}})
	cs := e.client(t, nil)

	var caps api.Capabilities
	structured(t, call(t, cs, "space_capabilities", map[string]any{"space": "s1"}), &caps)
	want := api.Limits{MaxClickCount: desktop.MaxClickCount, MaxScrollClicks: desktop.MaxScrollClicks,
		MaxScreenshotDimension: desktop.MaxDimensionLimit, MaxTypeChars: desktop.MaxTypeRunes, MaxClipboardBytes: desktop.MaxClipboardBytes}
	got := caps.Limits
	if got.MaxClickCount != want.MaxClickCount || got.MaxScrollClicks != want.MaxScrollClicks ||
		got.MaxScreenshotDimension != want.MaxScreenshotDimension || got.MaxTypeChars != want.MaxTypeChars ||
		got.MaxClipboardBytes != want.MaxClipboardBytes {
		t.Fatalf("capabilities limits %+v, want the desktop's %+v", got, want)
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"space_click", map[string]any{"x": 10, "y": 10, "count": 5}},
		{"space_scroll", map[string]any{"x": 10, "y": 10, "dy": 150}},
		{"space_screenshot", map[string]any{"max_dimension": 10000}},
	} {
		tc.args["space"] = "s1"
		if r := call(t, cs, tc.tool, tc.args); r.IsError {
			t.Errorf("%s %v: %s", tc.tool, tc.args, text(r))
		}
	}

	// Past the Space's own limit, its error names the bound.
	r := call(t, cs, "space_click", map[string]any{"space": "s1", "x": 10, "y": 10, "count": got.MaxClickCount + 1})
	if k := errKind(t, r); k != string(api.KindInvalidArgument) || !strings.Contains(text(r), "10") {
		t.Fatalf("count past the limit: kind %s: %s", k, text(r))
	}
}
