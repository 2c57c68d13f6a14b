package desktop_test

import (
	"context"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// TestHeld: a button and a key pressed through Held stay down between
// calls (the X server's pointer and keyboard state says so), a release
// lets go of each, and Close lets go of whatever is still down.
func TestHeld(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := context.Background()
	if _, err := d.Windows(ctx, ""); err != nil { // connect before the test client
		t.Fatal(err)
	}
	xc, win := showWindow(t, d, display)
	root := xproto.Setup(xc.C).DefaultScreen(xc.C).Root
	buttonDown := func() bool {
		q, err := xproto.QueryPointer(xc.C, root).Reply()
		if err != nil {
			t.Fatal(err)
		}
		return q.Mask&xproto.ButtonMask1 != 0
	}
	keysDown := func() int {
		km, err := xproto.QueryKeymap(xc.C).Reply()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, b := range km.Keys {
			for ; b != 0; b &= b - 1 {
				n++
			}
		}
		return n
	}
	h := d.NewHeld()
	p := api.Pointer{WindowID: win.WindowID}
	if _, err := h.Button(ctx, "left", true, p, 50, 50); err != nil {
		t.Fatal(err)
	}
	desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
	if !buttonDown() {
		t.Fatal("the left button is not down after a held press")
	}
	if _, err := h.Button(ctx, "left", false, p, 60, 60); err != nil {
		t.Fatal(err)
	}
	if buttonDown() {
		t.Fatal("the left button is still down after its release")
	}
	if _, err := h.Key(ctx, "shift_l", true); err != nil {
		t.Fatal(err)
	}
	if keysDown() != 1 {
		t.Fatalf("%d keys down after holding shift, want 1", keysDown())
	}
	if _, err := h.Key(ctx, "ctrl+a", true); api.KindOf(err) != api.KindInvalidArgument {
		t.Fatalf("holding a combination: %v, want invalid_argument", err)
	}
	if _, err := h.Button(ctx, "right", true, p, 50, 50); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	q, _ := xproto.QueryPointer(xc.C, root).Reply()
	if n := keysDown(); n != 0 || q.Mask&(xproto.ButtonMask1|xproto.ButtonMask3) != 0 {
		t.Fatalf("after Close: %d keys down, pointer mask %#x", n, q.Mask)
	}
}

// TestScreenSize follows the screen.
func TestScreenSize(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480", NoWindowManager: true})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	if s, err := d.ScreenSize(context.Background()); err != nil || s != (api.Size{Width: 640, Height: 480}) {
		t.Fatalf("screen size %+v, %v", s, err)
	}
}
