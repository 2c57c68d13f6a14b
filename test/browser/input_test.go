package browser_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// launchXterm starts an xterm (UTF-8) running command through the daemon
// and waits for its window.
func (e *env) launchXterm(t *testing.T, command string) api.Window {
	t.Helper()
	desktoptest.Require(t, "xterm")
	res, err := e.d.Client.LaunchApp(t.Context(), api.LaunchRequest{
		Argv:          []string{"xterm", "-u8", "-geometry", "60x10", "-e", "/bin/sh", "-c", command},
		Env:           map[string]string{"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
		WaitForWindow: true,
	})
	if err != nil {
		t.Fatalf("launch xterm: %v", err)
	}
	t.Cleanup(func() { _ = e.d.Client.CloseWindow(t.Context(), res.Window.WindowID) })
	return *res.Window
}

// pagePoint is where stream pixel (x, y)'s centre is on a page of the
// given size showing a stream of sw x sh: computed here from the layout
// the page promises (the frame scaled to fit, centred), not read from it.
func pagePoint(pw, ph, sw, sh, x, y int) (float64, float64) {
	scale := min(float64(pw)/float64(sw), float64(ph)/float64(sh))
	left := (float64(pw) - float64(sw)*scale) / 2
	top := (float64(ph) - float64(sh)*scale) / 2
	return left + (float64(x)+0.5)*scale, top + (float64(y)+0.5)*scale
}

// TestViewerTypesIntoXterm: text typed in the page reaches an xterm
// exactly, checked through the file its shell wrote: ASCII key by key,
// Cyrillic, CJK and a symbol committed as an IME would (insertText), a
// BackSpace that erases, the clipboard's text pasted with Ctrl+V, and
// Enter ending the line.
func TestViewerTypesIntoXterm(t *testing.T) {
	e := start(t, "800x600")
	out := filepath.Join(t.TempDir(), "typed")
	win := e.launchXterm(t, "stty -echo; exec cat > "+out)
	ep := e.link(t, api.TicketRequest{})
	p := e.b.newPage(t, 800, 600, 1)
	call(p, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		callBrowser(p, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: e.d.URL})
	}
	p.connect(ep.ViewerURL)
	// A click into the xterm gives it the focus.
	x, y := pagePoint(800, 600, 800, 600, win.Bounds.X+win.Bounds.Width/2, win.Bounds.Y+win.Bounds.Height/2)
	p.click(x, y, "left", 1)

	const pasted = "pasted ✓ line"
	if err := p.eval(`navigator.clipboard.writeText(`+jsString(pasted)+`)`, nil); err != nil {
		t.Fatalf("put text on the browser's clipboard: %v", err)
	}
	p.typeKeys("Hello, World! <>&|~ x")
	p.typeKeys(kb.Backspace)
	p.insertText("Привет ✓ 你好 ")
	p.typeKeys("v", chromedp.KeyModifiers(chromedp.ModifierCtrl), editCommands("paste"))
	p.typeKeys(kb.Enter)

	want := "Hello, World! <>&|~ Привет ✓ 你好 " + pasted
	desktoptest.EventuallyWithin(t, "the shell writing the typed line", pageTimeout, func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), "\n")
	})
	b, _ := os.ReadFile(out)
	if got := strings.TrimSuffix(string(b), "\n"); got != want {
		t.Fatalf("the xterm's program received %q, want %q", got, want)
	}
	p.noErrors()
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
