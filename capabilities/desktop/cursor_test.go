package desktop_test

import (
	"context"
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
)

// watch runs WatchCursor until the test ends, handing each Cursor over.
func watch(t *testing.T, d *desktop.Desktop, windowID uint32) <-chan desktop.Cursor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan desktop.Cursor, 256)
	done := make(chan error, 1)
	go func() {
		done <- d.WatchCursor(ctx, windowID, func(c desktop.Cursor) {
			select {
			case out <- c:
			default: // the test reads the latest; a full channel drops
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchCursor of window %d: %v", windowID, err)
		}
	})
	return out
}

// cursorUntil reads cursors until one satisfies ok.
func cursorUntil(t *testing.T, ch <-chan desktop.Cursor, what string, ok func(desktop.Cursor) bool) desktop.Cursor {
	t.Helper()
	var got desktop.Cursor
	desktoptest.Eventually(t, what, func() bool {
		for {
			select {
			case c := <-ch:
				got = c
				if ok(c) {
					return true
				}
			default:
				return false
			}
		}
	})
	return got
}

// TestWatchCursor: a watcher gets the pointer's position and shape at
// once; moving the pointer onto a window whose cursor is a hand brings
// the position and a new shape (image and hot spot from XFixes); moving
// it back brings the first shape's serial again. A watcher of the window
// gets the same positions in the window's own pixels.
func TestWatchCursor(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := t.Context()
	if _, err := d.MoveMouse(ctx, api.MouseMoveRequest{X: 5, Y: 470}); err != nil {
		t.Fatal(err)
	}
	title := desktoptest.RandomWord(t)
	xc := desktoptest.NewXClient(t, display, title, 200, 200, []desktoptest.Fill{desktoptest.Red})
	xc.SetGlyphCursor(t, desktoptest.CursorHand2)
	var win api.Window
	desktoptest.Eventually(t, "the window listed", func() bool {
		ws, err := d.Windows(ctx, title)
		if err == nil && len(ws) == 1 && ws[0].OnScreen {
			win = ws[0]
		}
		return win.WindowID != 0
	})

	screen := watch(t, d, 0)
	first := cursorUntil(t, screen, "the first cursor", func(c desktop.Cursor) bool { return true })
	if first.Shape == nil || first.X != 5 || first.Y != 470 {
		t.Fatalf("first cursor %+v, want the shape at (5, 470)", first)
	}
	inWin := watch(t, d, win.WindowID)
	cursorUntil(t, inWin, "the first cursor of the window's watcher", func(c desktop.Cursor) bool {
		return c.Shape != nil && c.X == 5-win.Bounds.X && c.Y == 470-win.Bounds.Y
	})

	px, py := win.Bounds.X+30, win.Bounds.Y+40
	if _, err := d.MoveMouse(ctx, api.MouseMoveRequest{X: float64(px), Y: float64(py)}); err != nil {
		t.Fatal(err)
	}
	over := cursorUntil(t, screen, "the hand over the window", func(c desktop.Cursor) bool {
		return c.X == px && c.Y == py && c.Serial != first.Serial
	})
	// The shape came with the serial change, in the message of the
	// change or an earlier one of the same serial.
	shape := over.Shape
	if shape == nil || shape.Image == nil {
		t.Fatalf("the hand cursor came without its image: %+v", over)
	}
	b := shape.Image.Bounds()
	if b.Dx() < 8 || b.Dy() < 8 || shape.HotX >= b.Dx() || shape.HotY >= b.Dy() || !opaqueAndClear(shape) {
		t.Fatalf("hand cursor %v, hot spot (%d, %d): want an image with opaque and clear pixels holding its hot spot", b, shape.HotX, shape.HotY)
	}
	cursorUntil(t, inWin, "the position in the window's pixels", func(c desktop.Cursor) bool { return c.X == 30 && c.Y == 40 })

	if _, err := d.MoveMouse(ctx, api.MouseMoveRequest{X: 5, Y: 470}); err != nil {
		t.Fatal(err)
	}
	cursorUntil(t, screen, "the first shape back", func(c desktop.Cursor) bool {
		return c.X == 5 && c.Y == 470 && c.Serial == first.Serial && c.Shape != nil
	})
}

// opaqueAndClear reports whether the image has both kinds of pixel.
func opaqueAndClear(s *desktop.CursorShape) bool {
	var opaque, clear bool
	for i := 3; i < len(s.Image.Pix); i += 4 {
		opaque = opaque || s.Image.Pix[i] == 0xff
		clear = clear || s.Image.Pix[i] == 0
	}
	return opaque && clear
}
