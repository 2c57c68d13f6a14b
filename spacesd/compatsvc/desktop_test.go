package compatsvc_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// desktopBus starts a display, a daemon without a token on it, and a bus
// client; the daemon connects to the display before any test X client
// (xgb's extension tables are package-level).
func desktopBus(t *testing.T, size string) (string, *spacesdtest.Daemon, *bus) {
	t.Helper()
	display := desktoptest.Start(t, desktoptest.Options{Size: size})
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display, NoToken: true})
	if _, err := d.Client.Capabilities(t.Context()); err != nil {
		t.Fatal(err)
	}
	return display, d, dialBus(t, wsURL(d), nil)
}

// showWindow opens a test X client's window and waits until the bus lists
// it, answering its id and content bounds.
func showWindow(t *testing.T, b *bus, display string) (*desktoptest.XClient, uint32, [4]int) {
	t.Helper()
	title := desktoptest.RandomWord(t)
	xc := desktoptest.NewXClient(t, display, title, 300, 200, []desktoptest.Fill{{W: 300, H: 200, RGB: 0x203040}})
	var id uint32
	desktoptest.Eventually(t, "the window listed", func() bool {
		ids, _ := b.ok("get_application_windows", map[string]any{"app": title})["windows"].([]any)
		if len(ids) == 1 {
			id = uint32(ids[0].(float64))
		}
		return id != 0
	})
	b.ok("activate_window", map[string]any{"window_id": id})
	pos := b.ok("get_window_position", map[string]any{"window_id": id})
	size := b.ok("get_window_size", map[string]any{"window_id": fmt.Sprintf("%#x", id)}) // a hex string, as xprop prints ids
	return xc, id, [4]int{int(pos["x"].(float64)), int(pos["y"].(float64)), int(size["width"].(float64)), int(size["height"].(float64))}
}

// Pointer commands reach an X client where they say, in screen pixels:
// clicks of each button, a click at the pointer's place, the wheel, a
// drag along a path; a button held with mouse_down is let go when the
// client goes away.
func TestBusPointer(t *testing.T) {
	display, d, b := desktopBus(t, "800x600")
	xc, _, bounds := showWindow(t, b, display)
	root := xproto.Setup(xc.C).DefaultScreen(xc.C).Root
	wx, wy := bounds[0], bounds[1]
	press := func(what string, button xproto.Button, x, y int) {
		t.Helper()
		ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
		if ev.Detail != button || int(ev.RootX) != x || int(ev.RootY) != y {
			t.Fatalf("%s: the client got button %d at (%d, %d), want %d at (%d, %d)", what, ev.Detail, ev.RootX, ev.RootY, button, x, y)
		}
	}
	xc.Drain()
	b.ok("left_click", map[string]any{"x": wx + 10, "y": wy + 20})
	press("left_click", 1, wx+10, wy+20)
	b.ok("right_click", map[string]any{"x": wx + 30, "y": wy + 40})
	press("right_click", 3, wx+30, wy+40)
	b.ok("double_click", map[string]any{"x": wx + 50, "y": wy + 60})
	press("double_click 1", 1, wx+50, wy+60)
	press("double_click 2", 1, wx+50, wy+60)
	b.ok("move_cursor", map[string]any{"x": wx + 70, "y": wy + 80})
	if p := b.ok("get_cursor_position", nil)["position"].(map[string]any); p["x"] != float64(wx+70) || p["y"] != float64(wy+80) {
		t.Fatalf("get_cursor_position: %v", p)
	}
	b.ok("click", nil) // at the pointer's place
	press("click without a point", 1, wx+70, wy+80)
	b.ok("scroll_down", map[string]any{"clicks": 2})
	press("scroll_down", 5, wx+70, wy+80)
	press("scroll_down", 5, wx+70, wy+80)
	b.ok("scroll", map[string]any{"x": 0, "y": 1}) // pynput's sense: y > 0 is up
	press("scroll up", 4, wx+70, wy+80)
	b.ok("scroll_direction", map[string]any{"direction": "left"})
	press("scroll_direction left", 6, wx+70, wy+80)
	b.fails("left_click", map[string]any{"x": 5}, "give both x and y")
	b.fails("left_click", map[string]any{"x": 5000, "y": 5}, "outside the 800x600 screen")

	pointer := func() (int, int, bool) {
		q, err := xproto.QueryPointer(xc.C, root).Reply()
		if err != nil {
			t.Fatal(err)
		}
		return int(q.RootX), int(q.RootY), q.Mask&xproto.ButtonMask1 != 0
	}
	b.ok("drag", map[string]any{"path": [][]int{{wx + 10, wy + 10}, {wx + 100, wy + 50}, {wx + 150, wy + 120}}, "duration": 0})
	press("drag's press", 1, wx+10, wy+10)
	if x, y, down := pointer(); x != wx+150 || y != wy+120 || down {
		t.Fatalf("after the drag the pointer is at (%d, %d), button down %v", x, y, down)
	}
	b.ok("mouse_down", map[string]any{"x": wx + 20, "y": wy + 30})
	press("mouse_down", 1, wx+20, wy+30)
	if _, _, down := pointer(); !down {
		t.Fatal("mouse_down did not keep the button down")
	}
	b.ok("mouse_up", map[string]any{"x": wx + 25, "y": wy + 35})
	if _, _, down := pointer(); down {
		t.Fatal("mouse_up did not let go")
	}
	b.ok("mouse_down", nil)
	b.ws.Close()
	desktoptest.Eventually(t, "the held button let go when its client left", func() bool { _, _, down := pointer(); return !down })
	if _, err := d.Client.Health(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Keys by computer-server's names reach the focused client, a hotkey with
// its modifiers held; a key held with key_down is let go when the client
// goes away.
func TestBusKeyboard(t *testing.T) {
	display, _, b := desktopBus(t, "800x600")
	xc, _, _ := showWindow(t, b, display)
	xc.Drain()
	b.ok("hotkey", map[string]any{"keys": []string{"ctrl", "shift", "a"}})
	ev := desktoptest.Next[xproto.KeyPressEvent](t, xc, desktoptest.EventTimeout)
	for ev.State&xproto.ModMaskControl == 0 || ev.State&xproto.ModMaskShift == 0 {
		ev = desktoptest.Next[xproto.KeyPressEvent](t, xc, desktoptest.EventTimeout) // the modifiers' own presses
	}
	b.ok("press_key", map[string]any{"key": "enter"})
	desktoptest.Next[xproto.KeyPressEvent](t, xc, desktoptest.EventTimeout)
	b.ok("key", map[string]any{"key": "pagedown"})
	desktoptest.Next[xproto.KeyPressEvent](t, xc, desktoptest.EventTimeout)
	b.fails("press_key", map[string]any{"key": "nosuchkey"}, "unknown key")

	keysDown := func() int {
		km, err := xproto.QueryKeymap(xc.C).Reply()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, k := range km.Keys {
			for ; k != 0; k &= k - 1 {
				n++
			}
		}
		return n
	}
	b.ok("key_down", map[string]any{"key": "shift"})
	if keysDown() != 1 {
		t.Fatal("key_down did not keep shift down")
	}
	b.ok("key_up", map[string]any{"key": "shift"})
	if keysDown() != 0 {
		t.Fatal("key_up did not let shift go")
	}
	b.ok("key_down", map[string]any{"key": "ctrl"})
	b.ws.Close()
	desktoptest.Eventually(t, "the held key let go when its client left", func() bool { return keysDown() == 0 })
}

// The screen and the windows: screenshots decode at the screen's size in
// both formats, the window commands read and change a client's window, and
// the accessibility tree lists it.
func TestBusScreenAndWindows(t *testing.T) {
	display, _, b := desktopBus(t, "800x600")
	_, id, _ := showWindow(t, b, display)
	if s := b.ok("get_screen_size", nil)["size"].(map[string]any); s["width"] != float64(800) || s["height"] != float64(600) {
		t.Fatalf("get_screen_size: %v", s)
	}
	for format, decode := range map[string]func([]byte) (image.Image, error){
		"png":  func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) },
		"jpeg": func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) },
	} {
		res := b.ok("screenshot", map[string]any{"format": format, "quality": 80})
		raw, err := base64.StdEncoding.DecodeString(str(res["image_data"]))
		if err != nil {
			t.Fatal(err)
		}
		img, err := decode(raw)
		if err != nil || img.Bounds().Dx() != 800 || img.Bounds().Dy() != 600 || res["format"] != format {
			t.Fatalf("%s screenshot: %v %v (format %v)", format, img.Bounds(), err, res["format"])
		}
	}
	b.fails("screenshot", map[string]any{"format": "gif"}, "want png or jpeg")
	if c := b.ok("to_screen_coordinates", map[string]any{"x": 12.5, "y": 7})["coordinates"]; fmt.Sprint(c) != "[12.5 7]" {
		t.Fatalf("to_screen_coordinates: %v", c)
	}

	if got := b.ok("get_current_window_id", nil)["window_id"]; got != float64(id) {
		t.Fatalf("get_current_window_id = %v, want the activated %d", got, id)
	}
	b.ok("set_window_position", map[string]any{"window_id": id, "x": 40, "y": 50})
	b.ok("set_window_size", map[string]any{"window_id": id, "width": 320, "height": 240})
	desktoptest.Eventually(t, "the window moved and resized", func() bool {
		p := b.ok("get_window_position", map[string]any{"window_id": id})
		s := b.ok("get_window_size", map[string]any{"window_id": id})
		return p["x"] == float64(40) && p["y"] == float64(50) && s["width"] == float64(320) && s["height"] == float64(240)
	})
	tree := b.ok("get_accessibility_tree", nil)
	root := tree["tree"].(map[string]any)
	if root["role"] != "desktop" || tree["source"] != "x11-windows" {
		t.Fatalf("accessibility tree root: %v", root)
	}
	found := false
	for _, c := range root["children"].([]any) {
		n := c.(map[string]any)
		if n["window_id"] == float64(id) && n["role"] == "window" && n["title"] != "" && n["focused"] == true {
			found = true
		}
	}
	if !found {
		t.Fatalf("the tree does not list the focused window %d: %v", id, root["children"])
	}
	name := str(b.ok("get_window_name", map[string]any{"window_id": id})["name"])
	if !strings.HasPrefix(name, "cua") {
		t.Fatalf("get_window_name: %q", name)
	}
	b.fails("get_window_name", map[string]any{"window_id": 12345}, "no window 12345")
	b.ok("minimize_window", map[string]any{"window_id": id})
	b.ok("close_window", map[string]any{"window_id": id})
	b.fails("set_wallpaper", map[string]any{"path": "/x.png"}, "not served by cua-spacesd")

	b.ok("set_clipboard", map[string]any{"text": "Привет ✓ clipboard"})
	if got := desktoptest.ReadClipboard(t, display); got != "Привет ✓ clipboard" {
		t.Fatalf("another program pastes %q", got)
	}
	if got := b.ok("copy_to_clipboard", nil)["content"]; got != "Привет ✓ clipboard" {
		t.Fatalf("copy_to_clipboard = %v", got)
	}
	if env := str(b.ok("get_desktop_environment", nil)["environment"]); env != "openbox" {
		t.Fatalf("get_desktop_environment = %q, want the window manager's name", env)
	}
}
