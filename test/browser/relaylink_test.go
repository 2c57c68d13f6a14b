package browser_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp/kb"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/spacesd/filesvc"
	"github.com/trycua/cua-spacesd/spacesd/relaysvc"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// TestViewerThroughTheRelay: the link `cua-bridge view relay:<computer>`
// prints opens in Chromium through a real relay (relayd, with its TURN
// server on loopback, real TLS from a test CA the browser is told to
// trust by its key) in front of a real Space attached to it: the page's peer
// connection gets the relay's TURN server with a viewer credential, the
// screen shows, and the overlay says the media went direct. The same
// link with ?ice=relay on its offer (the Space gathers relayed candidates
// only) shows the screen too, and says via TURN relay (udp or tcp).
func TestViewerThroughTheRelay(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	state := t.TempDir()
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display, Files: filesvc.Options{StateDir: state}, Relay: relaysvc.Options{StateDir: state}})
	// The daemon connects to the display before the test's X client does
	// (see spacesdtest.StartDesktop).
	caps, err := d.Client.Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ok, lim := caps.Supports(api.FeatureDesktopStream); !ok {
		t.Fatalf("desktop_stream unsupported: %s", lim)
	}
	e := &env{display: display, d: d}
	_, win := e.showWindow(t, 200, 200, quarters)

	rl := startTestRelay(t)
	bridge := func(args ...string) string { t.Helper(); return rl.bridge(t, args...) }
	bridge("space", "add", "dev", d.URL, "--token", d.Token)
	bridge("relay", "register", "dev", "--name", "box")

	// The browser trusts the relay's key alone, as it would a public CA's
	// certificate of the relay.
	b := startBrowserWith(t, rl.chromiumFlag)
	for _, tc := range []struct {
		name, ice, media, state string
	}{
		{"direct", "", "direct", "^Live · direct$"},
		// The Space's relayed candidate may be its TURN allocation over
		// UDP or over TCP: the protocol names the one ICE chose.
		{"TURN only", "relay", "turn", "^Live · via TURN relay \\((udp|tcp)\\)$"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := bridge("view", "relay:box")
			if !strings.HasPrefix(link, "https://"+rl.addr+"/c/box/viewer/#") || strings.Contains(link, rl.token) {
				t.Fatalf("link %q", link)
			}
			if tc.ice != "" {
				link = withOffer(t, link, api.QueryICE, tc.ice)
			}
			p := b.newPage(t, 800, 600, 1)
			p.connect(link)
			p.waitFills("the window's colours through the relay", win.Bounds.X, win.Bounds.Y, quarters)
			p.waitFor("the overlay matches "+tc.state, `document.body.dataset.path === '`+tc.media+`' &&
				/`+tc.state+`/.test(document.getElementById('state').textContent)`)
			if !value[bool](p, `window.__test.pcs.at(-1).getConfiguration().iceServers.some((s) =>
				s.urls.some((u) => u.startsWith('turn:127.0.0.1:')) && s.username.includes(':box:'))`) {
				t.Errorf("the page's ICE servers: %s, want the relay's TURN with a credential of box", value[string](p, `JSON.stringify(window.__test.pcs.at(-1).getConfiguration().iceServers)`))
			}
			// Text typed in the page reaches an xterm's program through
			// the relay (and its TURN), Unicode included.
			out := filepath.Join(t.TempDir(), "typed")
			xt := e.launchXterm(t, "stty -echo; exec cat > "+out)
			x, y := pagePoint(800, 600, 640, 480, xt.Bounds.X+xt.Bounds.Width/2, xt.Bounds.Y+xt.Bounds.Height/2)
			p.click(x, y, "left", 1)
			p.typeKeys("via " + tc.media + " ")
			p.insertText("Привет ✓ 你好")
			p.typeKeys(kb.Enter)
			want := "via " + tc.media + " Привет ✓ 你好\n"
			desktoptest.EventuallyWithin(t, "the typed line in the xterm's program", pageTimeout, func() bool {
				got, _ := os.ReadFile(out)
				return string(got) == want
			})
			_ = d.Client.CloseWindow(t.Context(), xt.WindowID)
			p.noErrors()
		})
	}
}
