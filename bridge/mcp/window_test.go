package mcp_test

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/mcp/spacetools"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// listedWindow answers the window as list_space_windows shows it.
func listedWindow(t *testing.T, cs *sdk.ClientSession, id uint32) (api.Window, bool) {
	t.Helper()
	var list spacetools.WindowList
	structured(t, call(t, cs, "list_space_windows", map[string]any{"space": "s1"}), &list)
	for _, w := range list.Windows {
		if w.WindowID == id {
			return w, true
		}
	}
	return api.Window{}, false
}

func windowAction(t *testing.T, cs *sdk.ClientSession, args map[string]any) spacetools.WindowAction {
	t.Helper()
	args["space"] = "s1"
	r := call(t, cs, "space_window", args)
	if r.IsError {
		t.Fatalf("space_window %v: %s", args, text(r))
	}
	var a spacetools.WindowAction
	structured(t, r, &a)
	return a
}

// An xterm under openbox is moved, resized, minimized, maximized,
// restored and closed with space_window, each step checked with
// list_space_windows.
func TestWindowTool(t *testing.T) {
	desktoptest.Require(t, "xterm")
	display := desktoptest.Start(t, desktoptest.Options{})
	e := newEnvWith(t, envOptions{daemon: spacesdtest.Options{Display: display}})
	cs := e.client(t, nil)

	var launched api.LaunchResult
	structured(t, call(t, cs, "launch_app", map[string]any{"space": "s1", "argv": []string{"xterm", "-e", "sleep", "600"}}), &launched)
	if launched.Window == nil {
		t.Fatalf("launch_app answered no window: %+v", launched)
	}
	id := launched.Window.WindowID
	t.Cleanup(func() { _ = e.daemon.Client.CloseWindow(t.Context(), id) })

	a := windowAction(t, cs, map[string]any{"window_id": id, "action": "move", "x": 150, "y": 100})
	l, ok := listedWindow(t, cs, id)
	// The xterm's own 1-pixel border sits around its content.
	if !ok || l.Bounds != a.Window.Bounds || l.Bounds.X < 150 || l.Bounds.X > 152 || l.Bounds.Y < 100 || l.Bounds.Y > 102 {
		t.Fatalf("moved to 150,100: answered %+v, listed %+v", a.Window.Bounds, l.Bounds)
	}
	a = windowAction(t, cs, map[string]any{"window_id": id, "action": "resize", "width": 400, "height": 250})
	l, _ = listedWindow(t, cs, id)
	// xterm sizes itself in whole character cells.
	if l.Bounds != a.Window.Bounds || l.Bounds.Width > 400 || l.Bounds.Width < 380 || l.Bounds.Height > 250 || l.Bounds.Height < 220 {
		t.Fatalf("resized to 400x250: answered %+v, listed %+v", a.Window.Bounds, l.Bounds)
	}
	normal := l.Bounds

	for _, step := range []struct {
		action string
		state  api.WindowState
	}{{"minimize", api.WindowMinimized}, {"restore", api.WindowNormal}, {"maximize", api.WindowMaximized}, {"restore", api.WindowNormal}} {
		a = windowAction(t, cs, map[string]any{"window_id": id, "action": step.action})
		l, ok = listedWindow(t, cs, id)
		if a.Window.State != step.state || !ok || l.State != step.state {
			t.Fatalf("%s: answered %q, listed %+v", step.action, a.Window.State, l)
		}
		if step.state == api.WindowMaximized && (l.Bounds.Width <= normal.Width || l.Bounds.Height <= normal.Height) {
			t.Fatalf("maximized to %+v, no larger than %+v", l.Bounds, normal)
		}
		if step.state == api.WindowMinimized && l.OnScreen {
			t.Fatalf("minimized, yet listed on screen: %+v", l)
		}
	}

	a = windowAction(t, cs, map[string]any{"window_id": id, "action": "close"})
	if !a.Closed || a.Window.WindowID != id {
		t.Fatalf("close answered %+v", a)
	}
	if l, ok := listedWindow(t, cs, id); ok {
		t.Fatalf("closed, yet listed: %+v", l)
	}
	r := call(t, cs, "space_window", map[string]any{"space": "s1", "window_id": id, "action": "minimize"})
	if k := errKind(t, r); k != string(api.KindNotFound) {
		t.Fatalf("minimize a closed window: kind %s: %s", k, text(r))
	}
}

// The clipboard round trip, and another X program pasting what was set.
func TestClipboardTools(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{})
	e := newEnvWith(t, envOptions{daemon: spacesdtest.Options{Display: display}})
	cs := e.client(t, nil)
	const want = "Привет ✓"
	r := call(t, cs, "space_clipboard_set", map[string]any{"space": "s1", "text": want})
	var set spacetools.ClipboardSet
	structured(t, r, &set)
	if r.IsError || set.Chars != 8 || set.Bytes != len(want) {
		t.Fatalf("set: %+v: %s", set, text(r))
	}
	r = call(t, cs, "space_clipboard_get", map[string]any{"space": "s1"})
	var got api.ClipboardText
	structured(t, r, &got)
	if r.IsError || got.Text != want || text(r) != want {
		t.Fatalf("get: %+v: %s", got, text(r))
	}
	if pasted := desktoptest.ReadClipboard(t, display); pasted != want {
		t.Fatalf("another X client pasted %q, want %q", pasted, want)
	}
}

func TestWindowToolRefusals(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{})
	e := newEnvWith(t, envOptions{daemon: spacesdtest.Options{Display: display}})
	cs := e.client(t, nil)
	for _, tc := range []struct {
		args    map[string]any
		mention string
	}{
		{map[string]any{"action": "move", "x": 1}, "move needs x and y"},
		{map[string]any{"action": "resize", "width": 100}, "resize needs width and height"},
		{map[string]any{"action": "move", "x": 1, "y": 1, "width": 100}, "width and height are for resize"},
		{map[string]any{"action": "close", "x": 1}, "x and y are for move"},
	} {
		tc.args["space"], tc.args["window_id"] = "s1", 12345
		r := call(t, cs, "space_window", tc.args)
		if k := errKind(t, r); k != string(api.KindInvalidArgument) || !strings.Contains(text(r), tc.mention) {
			t.Errorf("%v: kind %s: %s", tc.args, k, text(r))
		}
	}
	r := call(t, cs, "space_window", map[string]any{"space": "s1", "window_id": 12345, "action": "close"})
	if k := errKind(t, r); k != string(api.KindNotFound) {
		t.Fatalf("close an unknown window: kind %s: %s", k, text(r))
	}
}

// Without a display, the window and clipboard tools answer
// capability_missing naming their feature.
func TestDesktopToolsWithoutDisplay(t *testing.T) {
	e := newEnv(t)
	cs := e.client(t, nil)
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		feature api.Feature
	}{
		{"space_window", map[string]any{"window_id": 1, "action": "minimize"}, api.FeatureWindows},
		{"space_clipboard_get", map[string]any{}, api.FeatureClipboardText},
		{"space_clipboard_set", map[string]any{"text": "x"}, api.FeatureClipboardText},
	} {
		tc.args["space"] = "s1"
		r := call(t, cs, tc.tool, tc.args)
		if k := errKind(t, r); k != string(api.KindCapabilityMissing) || !strings.Contains(text(r), string(tc.feature)) {
			t.Errorf("%s: kind %s: %s", tc.tool, k, text(r))
		}
	}
}
