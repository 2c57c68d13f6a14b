package desktopsvc_test

import (
	"context"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/api/client"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// desktopDaemon starts a display and a daemon on it.
func desktopDaemon(t *testing.T) (string, *client.Client) {
	t.Helper()
	display := desktoptest.Start(t, desktoptest.Options{})
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display})
	// Connect the daemon before any test X client: xgb registers extension
	// event decoders in package-level maps when a connection starts, which
	// races with another connection's reader in the same process.
	if _, err := d.Client.Capabilities(t.Context()); err != nil {
		t.Fatalf("capabilities: %v", err)
	}
	return display, d.Client
}

// launchXterm starts an xterm running command and waits for its window.
func launchXterm(t *testing.T, c *client.Client, command string) api.Window {
	t.Helper()
	desktoptest.Require(t, "xterm")
	ctx := t.Context()
	res, err := c.LaunchApp(ctx, api.LaunchRequest{
		Argv:          []string{"xterm", "-u8", "-e", "/bin/sh", "-c", command},
		Env:           map[string]string{"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
		WaitForWindow: true,
	})
	if err != nil {
		t.Fatalf("launch xterm: %v", err)
	}
	if res.Window == nil || res.Window.PID != res.PID {
		t.Fatalf("launch answered window %+v for pid %d", res.Window, res.PID)
	}
	// Close the window, not kill(-pid): xterm may have exited and been
	// reaped already, and its pid then names some other process group.
	t.Cleanup(func() { _ = c.CloseWindow(context.Background(), res.Window.WindowID) })
	if _, err := c.ActivateWindow(ctx, res.Window.WindowID); err != nil {
		t.Fatalf("activate xterm: %v", err)
	}
	return *res.Window
}

func TestXtermTypeAndReturn(t *testing.T) {
	_, c := desktopDaemon(t)
	ctx := t.Context()
	out := filepath.Join(t.TempDir(), "f")
	win := launchXterm(t, c, "exec /bin/sh")

	list, err := c.Windows(ctx, "xterm")
	if err != nil {
		t.Fatalf("windows: %v", err)
	}
	found := false
	for _, w := range list {
		if w.WindowID == win.WindowID {
			found = true
			if w.PID != win.PID || w.AppName != "XTerm" || !w.OnScreen || w.Bounds.Width == 0 {
				t.Errorf("xterm listed as %+v", w)
			}
		}
	}
	if !found {
		t.Fatalf("xterm window %d not in the list %+v", win.WindowID, list)
	}

	word := desktoptest.RandomWord(t)
	if _, err := c.Type(ctx, "echo "+word+" > "+out); err != nil {
		t.Fatalf("type: %v", err)
	}
	if _, err := c.Key(ctx, "Return"); err != nil {
		t.Fatalf("key: %v", err)
	}
	desktoptest.Eventually(t, "the shell writing "+out, func() bool {
		b, _ := os.ReadFile(out)
		return strings.TrimSpace(string(b)) == word
	})
}

func TestTypeUnicode(t *testing.T) {
	_, c := desktopDaemon(t)
	ctx := t.Context()
	out := filepath.Join(t.TempDir(), "u")
	launchXterm(t, c, "stty -echo; exec cat > "+out)
	const text = "Привет 你好 ✓ Hello, World! <>&|~"
	if _, err := c.Type(ctx, text+"\n"); err != nil {
		t.Fatalf("type: %v", err)
	}
	desktoptest.Eventually(t, "cat writing the typed line", func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), "\n")
	})
	b, _ := os.ReadFile(out)
	if got := strings.TrimSuffix(string(b), "\n"); got != text {
		t.Fatalf("typed %q, the program received %q", text, got)
	}
}

func TestClickLandsWhereTheScreenshotShows(t *testing.T) {
	display, c := desktopDaemon(t)
	ctx := t.Context()
	title := desktoptest.RandomWord(t)
	xc := desktoptest.NewXClient(t, display, title, 400, 300, []desktoptest.Fill{{X: 0, Y: 0, W: 400, H: 300, RGB: 0x3050a0}})
	win := waitWindow(t, c, title)

	cases := []struct {
		name   string
		maxDim int
		window bool
	}{
		{"screen unscaled", 0, false},
		{"screen scaled", 960, false},
		{"screen scaled odd", 777, false},
		{"window unscaled", 0, true},
		{"window scaled", 150, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := api.ScreenshotRequest{MaxDimension: tc.maxDim, Format: api.FormatPNG}
			if tc.window {
				req.WindowID = win.WindowID
			}
			_, info, err := c.Screenshot(ctx, req)
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			if tc.maxDim > 0 && (info.Scale >= 1 || max(info.Width, info.Height) != tc.maxDim) {
				t.Fatalf("scaled screenshot answered %+v", info)
			}
			// A point inside the window, in the screenshot's own pixels.
			px := int(float64(win.Bounds.X-info.Bounds.X+123) * info.Scale)
			py := int(float64(win.Bounds.Y-info.Bounds.Y+77) * info.Scale)
			xc.Drain()
			p := api.Pointer{Scale: info.Scale, WindowID: info.WindowID}
			res, err := c.Click(ctx, api.ClickRequest{X: float64(px), Y: float64(py), Pointer: p})
			if err != nil {
				t.Fatalf("click: %v", err)
			}
			ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
			// The screenshot pixel covers screen pixels [p/scale, (p+1)/scale).
			lo := func(v int) int { return int(float64(v) / info.Scale) }
			hi := func(v int) int { return int(float64(v+1)/info.Scale + 0.999) }
			gx, gy := int(ev.RootX)-info.Bounds.X, int(ev.RootY)-info.Bounds.Y
			if gx < lo(px) || gx >= hi(px) || gy < lo(py) || gy >= hi(py) {
				t.Fatalf("clicked screenshot pixel (%d, %d) at scale %v; the client got root (%d, %d), which is not under that pixel", px, py, info.Scale, ev.RootX, ev.RootY)
			}
			if int(ev.RootX) != res.X || int(ev.RootY) != res.Y || ev.Detail != 1 {
				t.Fatalf("click answered %+v; the client got button %d at (%d, %d)", res, ev.Detail, ev.RootX, ev.RootY)
			}
			if tc.maxDim == 0 && (gx != px || gy != py) {
				t.Fatalf("unscaled: clicked (%d, %d), got (%d, %d)", px, py, gx, gy)
			}
		})
	}
}

// waitWindow waits until a window with the title is listed.
func waitWindow(t *testing.T, c *client.Client, title string) api.Window {
	t.Helper()
	var win api.Window
	desktoptest.Eventually(t, "window "+title+" listed", func() bool {
		ws, err := c.Windows(t.Context(), title)
		if err != nil || len(ws) != 1 || !ws[0].OnScreen {
			return false
		}
		win = ws[0]
		return true
	})
	return win
}

func TestScreenshotColours(t *testing.T) {
	display, c := desktopDaemon(t)
	ctx := t.Context()
	title := desktoptest.RandomWord(t)
	desktoptest.NewXClient(t, display, title, 200, 200, []desktoptest.Fill{desktoptest.Red, desktoptest.Green, desktoptest.Blue, desktoptest.White})
	win := waitWindow(t, c, title)
	if _, err := c.ActivateWindow(ctx, win.WindowID); err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, img image.Image, ox, oy, tol int) {
		t.Helper()
		for _, f := range []desktoptest.Fill{desktoptest.Red, desktoptest.Green, desktoptest.Blue, desktoptest.White} {
			x, y := ox+f.X+f.W/2, oy+f.Y+f.H/2
			r, g, b, _ := img.At(x, y).RGBA()
			want := [3]int{int(f.RGB >> 16 & 0xff), int(f.RGB >> 8 & 0xff), int(f.RGB & 0xff)}
			got := [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
			for i := range want {
				if d := got[i] - want[i]; d > tol || d < -tol {
					t.Fatalf("pixel (%d, %d): got rgb %v, want %v", x, y, got, want)
				}
			}
		}
	}
	for _, tc := range []struct {
		format string
		tol    int
	}{{api.FormatPNG, 0}, {api.FormatJPEG, 24}} {
		t.Run(tc.format+" screen", func(t *testing.T) {
			b, info, err := c.Screenshot(ctx, api.ScreenshotRequest{Format: tc.format, Quality: 90})
			if err != nil {
				t.Fatal(err)
			}
			check(t, decodeShot(t, b, info), win.Bounds.X, win.Bounds.Y, tc.tol)
		})
		t.Run(tc.format+" window", func(t *testing.T) {
			b, info, err := c.Screenshot(ctx, api.ScreenshotRequest{Format: tc.format, WindowID: win.WindowID, Quality: 90})
			if err != nil {
				t.Fatal(err)
			}
			if info.Bounds != win.Bounds || info.Width != 200 {
				t.Fatalf("window screenshot info %+v, window %+v", info, win)
			}
			check(t, decodeShot(t, b, info), 0, 0, tc.tol)
		})
	}

	t.Run("covered window", func(t *testing.T) {
		coverTitle := desktoptest.RandomWord(t)
		desktoptest.NewXClient(t, display, coverTitle, 300, 300, []desktoptest.Fill{{X: 0, Y: 0, W: 300, H: 300, RGB: 0x000000}})
		cover := waitWindow(t, c, coverTitle)
		x, y := win.Bounds.X-20, win.Bounds.Y-20
		if _, err := c.SetWindowGeometry(ctx, cover.WindowID, api.GeometryRequest{X: &x, Y: &y}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ActivateWindow(ctx, cover.WindowID); err != nil {
			t.Fatal(err)
		}
		// The screen shows the cover where the window is...
		desktoptest.Eventually(t, "the cover hiding the window", func() bool {
			b, info, err := c.Screenshot(ctx, api.ScreenshotRequest{})
			if err != nil {
				return false
			}
			img := decodeShot(t, b, info)
			r, g, bl, _ := img.At(win.Bounds.X+50, win.Bounds.Y+50).RGBA()
			return r == 0 && g == 0 && bl == 0
		})
		// ...and the window's own screenshot still shows its content.
		b, info, err := c.Screenshot(ctx, api.ScreenshotRequest{WindowID: win.WindowID})
		if err != nil {
			t.Fatal(err)
		}
		check(t, decodeShot(t, b, info), 0, 0, 0)
	})
}

func TestClipboardRoundTrip(t *testing.T) {
	display, c := desktopDaemon(t)
	ctx := t.Context()
	text := "clip " + desktoptest.RandomWord(t) + " ✓ Привет"
	if err := c.ClipboardSet(ctx, text); err != nil {
		t.Fatal(err)
	}
	got, err := c.ClipboardGet(ctx)
	if err != nil || got != text {
		t.Fatalf("clipboard get = %q, %v; want %q", got, err, text)
	}
	// Another X client pastes it too.
	if pasted := desktoptest.ReadClipboard(t, display); pasted != text {
		t.Fatalf("another X client pasted %q, want %q", pasted, text)
	}
}

func TestWithoutDisplay(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{})
	c := d.Client
	ctx := context.Background()
	calls := map[api.Feature]func() error{
		api.FeatureWindows: func() error { _, err := c.Windows(ctx, ""); return err },
		api.FeatureLaunchApp: func() error {
			_, err := c.LaunchApp(ctx, api.LaunchRequest{Argv: []string{"true"}})
			return err
		},
		api.FeatureScreenshot:    func() error { _, _, err := c.Screenshot(ctx, api.ScreenshotRequest{}); return err },
		api.FeatureInput:         func() error { _, err := c.Click(ctx, api.ClickRequest{X: 1, Y: 1}); return err },
		api.FeatureClipboardText: func() error { _, err := c.ClipboardGet(ctx); return err },
	}
	inputs := map[string]func() error{
		"move":   func() error { _, err := c.MoveMouse(ctx, api.MouseMoveRequest{}); return err },
		"drag":   func() error { _, err := c.Drag(ctx, api.DragRequest{}); return err },
		"scroll": func() error { _, err := c.Scroll(ctx, api.ScrollRequest{DY: 1}); return err },
		"key":    func() error { _, err := c.Key(ctx, "Return"); return err },
		"type":   func() error { _, err := c.Type(ctx, "x"); return err },
	}
	for name, call := range inputs {
		calls[api.Feature("input/"+name)] = call
	}
	for f, call := range calls {
		t.Run(string(f), func(t *testing.T) {
			err := call()
			e := api.AsError(err)
			want := strings.SplitN(string(f), "/", 2)[0]
			if e == nil || e.Kind != api.KindCapabilityMissing || e.Feature != want || !strings.Contains(e.Limitation, "DISPLAY is unset") {
				t.Fatalf("got %#v; want capability_missing naming %s and DISPLAY", e, want)
			}
		})
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []api.Feature{api.FeatureWindows, api.FeatureScreenshot, api.FeatureInput, api.FeatureClipboardText, api.FeatureLaunchApp} {
		if ok, lim := caps.Supports(f); ok || !strings.Contains(lim, "DISPLAY") {
			t.Errorf("capabilities: %s supported=%v limitation %q", f, ok, lim)
		}
	}
}

func TestDisplayRefused(t *testing.T) {
	d := spacesdtest.Start(t, spacesdtest.Options{Display: ":4242"})
	_, err := d.Client.Windows(context.Background(), "")
	e := api.AsError(err)
	if e == nil || e.Kind != api.KindCapabilityMissing || !strings.Contains(e.Limitation, "refused") {
		t.Fatalf("got %#v; want capability_missing saying the display refused", e)
	}
}
