package desktop_test

import (
	"context"
	"testing"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// TestCursorPosition reads the pointer where the X server has it: after
// our own move, and after another client warped it.
func TestCursorPosition(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480", NoWindowManager: true})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := context.Background()
	if _, err := d.MoveMouse(ctx, api.MouseMoveRequest{X: 123, Y: 45}); err != nil {
		t.Fatal(err)
	}
	if p, err := d.CursorPosition(ctx); err != nil || p.X != 123 || p.Y != 45 {
		t.Fatalf("after moving to (123, 45): %+v, %v", p, err)
	}
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root := xproto.Setup(c).DefaultScreen(c).Root
	if err := xproto.WarpPointerChecked(c, 0, root, 0, 0, 0, 0, 600, 400).Check(); err != nil {
		t.Fatal(err)
	}
	if p, err := d.CursorPosition(ctx); err != nil || p.X != 600 || p.Y != 400 {
		t.Fatalf("after another client warped it to (600, 400): %+v, %v", p, err)
	}
}
