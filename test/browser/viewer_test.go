package browser_test

import (
	"bytes"
	"image"
	"image/png"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// quarters of the test window, in colours no theme uses.
var quarters = []desktoptest.Fill{desktoptest.Red, desktoptest.Green, desktoptest.Blue, desktoptest.White}

// TestViewerShowsTheScreen: the page opened with a link decodes frames
// (getStats' framesDecoded grows), a canvas read of its video shows the
// test client's four colours where its window is, the overlay says it is
// live, direct, with the stream's size, frame rate and round trip, nothing broke
// the page's CSP, and a PNG screenshot of the page, showing the window
// where the letterboxing puts it, is kept for a person to look at.
func TestViewerShowsTheScreen(t *testing.T) {
	e := start(t, "800x600")
	xc, win := e.showWindow(t, 200, 200, quarters)
	ep := e.link(t, api.TicketRequest{})
	p := e.b.newPage(t, 1000, 600, 1)
	p.connect(ep.ViewerURL)
	n := p.framesDecoded()
	xc.Fill(desktoptest.Fill{X: 0, Y: 0, W: 10, H: 10, RGB: 0x102030}) // a change: a frame more
	p.waitFrames("more frames decoded", n)

	p.waitFills("the window's colours in the video", win.Bounds.X, win.Bounds.Y, quarters)
	p.waitFor("the overlay's figures: resolution, frame rate, round trip", `(() => {
		const s = document.getElementById('stats').textContent;
		return s.includes('800×600') && / \d+ fps/.test(s) && /RTT \d/.test(s);
	})()`)
	// The daemon tells the page the pair ICE chose: on loopback, direct.
	p.waitFor("the overlay says the stream is live, direct", `document.getElementById('state').textContent === 'Live · direct' &&
		document.body.dataset.path === 'direct'`)
	if url := value[string](p, `location.href`); strings.Contains(url, "ticket") {
		t.Errorf("the ticket stayed in the address bar: %s", url)
	}

	// The screenshot: 800x600 in a 1000x600 page is letterboxed left and
	// right by 100 pixels; the red quarter's centre is there.
	path := filepath.Join(artifactDir(t), "viewer-screen.png")
	shot := p.screenshot(path)
	t.Logf("screenshot of the viewer page: %s", path)
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	rx, ry := 100+win.Bounds.X+50, win.Bounds.Y+50
	r, g, b, _ := img.At(rx, ry).RGBA()
	if c := uint32(r>>8)<<16 | uint32(g>>8)<<8 | uint32(b>>8); !desktoptest.NearRGB(c, 0xff0000) {
		t.Errorf("screenshot at (%d, %d) is %06x, want the red quarter", rx, ry, c)
	}
	if img.Bounds() != image.Rect(0, 0, 1000, 600) {
		t.Errorf("screenshot of %v, want the page's 1000x600", img.Bounds())
	}
	p.noErrors()
}
