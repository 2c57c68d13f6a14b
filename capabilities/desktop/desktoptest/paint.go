package desktoptest

import (
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// maxPutImageBytes keeps each PutImage under the core protocol's request
// size (65535 words) without BIG-REQUESTS.
const maxPutImageBytes = 200 << 10

// PaintRoot makes pix, w x h BGRX pixels tightly packed, the background of
// the display's root window: what the screen shows where no window is,
// repainted by the server itself whenever it is exposed.
func PaintRoot(t testing.TB, display string, pix []byte, w, h int) {
	t.Helper()
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("paint root: connect %s: %v", display, err)
	}
	defer c.Close()
	screen := xproto.Setup(c).DefaultScreen(c)
	pid, err := c.NewId()
	if err != nil {
		t.Fatalf("paint root: %v", err)
	}
	gid, err := c.NewId()
	if err != nil {
		t.Fatalf("paint root: %v", err)
	}
	pixmap, gc := xproto.Pixmap(pid), xproto.Gcontext(gid)
	if err := xproto.CreatePixmapChecked(c, screen.RootDepth, pixmap, xproto.Drawable(screen.Root), uint16(w), uint16(h)).Check(); err != nil {
		t.Fatalf("paint root: create pixmap: %v", err)
	}
	xproto.CreateGC(c, gc, xproto.Drawable(pixmap), 0, nil)
	rows := max(1, maxPutImageBytes/(w*4))
	for y := 0; y < h; y += rows {
		n := min(rows, h-y)
		xproto.PutImage(c, xproto.ImageFormatZPixmap, xproto.Drawable(pixmap), gc, uint16(w), uint16(n), 0, int16(y), 0, screen.RootDepth, pix[y*w*4:(y+n)*w*4])
	}
	xproto.ChangeWindowAttributes(c, screen.Root, xproto.CwBackPixmap, []uint32{uint32(pixmap)})
	// The root keeps its own reference to the pixmap.
	xproto.FreePixmap(c, pixmap)
	if err := xproto.ClearAreaChecked(c, false, screen.Root, 0, 0, 0, 0).Check(); err != nil {
		t.Fatalf("paint root: %v", err)
	}
}
