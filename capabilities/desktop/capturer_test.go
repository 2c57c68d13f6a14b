package desktop_test

import (
	"context"
	"errors"
	"fmt"
	"image"
	"runtime"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/media/jpegenc"
)

// next is c.Next bounded by desktoptest.EventTimeout (a liveness bound: a
// Next that waits for damage that never comes fails the test).
func next(t *testing.T, c *desktop.Capturer) desktop.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), desktoptest.EventTimeout)
	defer cancel()
	f, err := c.Next(ctx)
	if err != nil {
		t.Fatalf("next frame: %v", err)
	}
	return f
}

// idle waits until nothing more is drawn on c's target (openbox may still
// be decorating a new window), then reads a whole frame.
func idle(t *testing.T, c *desktop.Capturer) desktop.Frame {
	t.Helper()
	ctx := context.Background()
	desktoptest.Eventually(t, "the display idle", func() bool {
		d, err := desktop.TakeDamage(ctx, c)
		if err != nil {
			t.Fatalf("take damage: %v", err)
		}
		return len(d) == 0
	})
	c.RequestFull()
	f := next(t, c)
	if !f.Full {
		t.Fatalf("frame after RequestFull is not whole: %+v", f.Damage)
	}
	return f
}

// samePixels compares a BGRX frame with the RGBA capture of the same
// target, pixel by pixel.
func samePixels(t *testing.T, what string, f desktop.Frame, img *image.RGBA) {
	t.Helper()
	if f.Width != img.Rect.Dx() || f.Height != img.Rect.Dy() {
		t.Fatalf("%s: frame %dx%d, RGBA capture %v", what, f.Width, f.Height, img.Rect)
	}
	for y := range f.Height {
		for x := range f.Width {
			b := f.Pix[y*f.Stride+x*4:]
			r := img.Pix[y*img.Stride+x*4:]
			if b[2] != r[0] || b[1] != r[1] || b[0] != r[2] {
				t.Fatalf("%s: pixel (%d, %d) is BGRX %x, RGBA %x", what, x, y, b[:4], r[:4])
			}
		}
	}
}

// pixelAt is the 0xRRGGBB of a frame's pixel.
func pixelAt(f desktop.Frame, x, y int) uint32 {
	p := f.Pix[y*f.Stride+x*4:]
	return uint32(p[2])<<16 | uint32(p[1])<<8 | uint32(p[0])
}

func union(rs []image.Rectangle) image.Rectangle {
	var u image.Rectangle
	for _, r := range rs {
		u = u.Union(r)
	}
	return u
}

// showWindow opens a test X client's 200x200 window of four colours and
// waits until it is managed and painted. d must be connected first (see
// desktopDaemon).
func showWindow(t *testing.T, d *desktop.Desktop, display string) (*desktoptest.XClient, api.Window) {
	t.Helper()
	ctx := context.Background()
	title := desktoptest.RandomWord(t)
	xc := desktoptest.NewXClient(t, display, title, 200, 200, []desktoptest.Fill{desktoptest.Red, desktoptest.Green, desktoptest.Blue, desktoptest.White})
	var win api.Window
	desktoptest.Eventually(t, "window "+title+" shown", func() bool {
		ws, err := d.Windows(ctx, title)
		if err != nil || len(ws) != 1 || !ws[0].OnScreen {
			return false
		}
		win = ws[0]
		img, _, err := d.Capture(ctx, win.WindowID)
		return err == nil && img.RGBAAt(150, 150).R == 0xff && img.RGBAAt(50, 50).G == 0
	})
	return xc, win
}

// TestCapturer follows a real X client's drawing through the capture seam,
// for the screen and for its window, with and without Composite: the
// first frame is whole and equal to the RGBA capture; a fill the client
// paints comes as exactly its rectangle of damage, with its pixels read;
// nothing is left behind (a capture draws nothing itself); RequestFull
// gives a whole frame at once; Close ends a waiting Next.
func TestCapturer(t *testing.T) {
	for _, noComposite := range []bool{false, true} {
		t.Run(fmt.Sprintf("composite=%v", !noComposite), func(t *testing.T) {
			display := desktoptest.Start(t, desktoptest.Options{Size: "640x480", NoComposite: noComposite})
			d := desktop.New(desktop.Options{Display: display})
			t.Cleanup(d.Close)
			ctx := context.Background()
			if _, err := d.Windows(ctx, ""); err != nil { // connect before the test client (see desktopDaemon)
				t.Fatal(err)
			}
			xc, win := showWindow(t, d, display)

			for _, target := range []struct {
				name   string
				id     uint32
				origin image.Point // the window's place in the target's frames
			}{
				{"screen", 0, image.Pt(win.Bounds.X, win.Bounds.Y)},
				{"window", win.WindowID, image.Point{}},
			} {
				t.Run(target.name, func(t *testing.T) {
					c := d.NewCapturer(target.id)
					t.Cleanup(c.Close)
					first := next(t, c)
					if !first.Full || first.Damage != nil {
						t.Fatalf("first frame: full %v, damage %v", first.Full, first.Damage)
					}
					f := idle(t, c)
					img, bounds, err := d.Capture(ctx, target.id)
					if err != nil {
						t.Fatal(err)
					}
					if f.Bounds != bounds {
						t.Fatalf("frame bounds %+v, capture bounds %+v", f.Bounds, bounds)
					}
					samePixels(t, "whole frame", f, img)

					fill := desktoptest.Fill{X: 20, Y: 30, W: 40, H: 10, RGB: 0x123456}
					if target.id != 0 {
						fill.RGB = 0x654321 // not the screen's: the window already shows it
						fill.X = 70
					}
					xc.Fill(fill)
					f = next(t, c)
					want := image.Rect(fill.X, fill.Y, fill.X+fill.W, fill.Y+fill.H).Add(target.origin)
					if f.Full || union(f.Damage) != want {
						t.Fatalf("frame after a fill at %v: full %v, damage %v", want, f.Full, f.Damage)
					}
					if got := pixelAt(f, want.Min.X, want.Min.Y); got != fill.RGB {
						t.Fatalf("pixel %v after the fill: %06x, want %06x", want.Min, got, fill.RGB)
					}
					if left, err := desktop.TakeDamage(ctx, c); err != nil || len(left) != 0 {
						t.Fatalf("damage left after the frame (the capture drew?): %v, %v", left, err)
					}
					img, _, err = d.Capture(ctx, target.id)
					if err != nil {
						t.Fatal(err)
					}
					samePixels(t, "frame updated by its damage", f, img)

					// A wait that ends with its deadline costs nothing: the
					// next change still comes as damage, not a whole frame.
					short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
					_, err = c.Next(short)
					cancel()
					if api.KindOf(err) != api.KindTimeout {
						t.Fatalf("Next on an idle display with a deadline: %v; want timeout", err)
					}
					fill.Y += 20
					xc.Fill(fill)
					if f = next(t, c); f.Full || union(f.Damage) != want.Add(image.Pt(0, 20)) {
						t.Fatalf("frame after a timed-out wait and a fill: full %v, damage %v", f.Full, f.Damage)
					}

					c.RequestFull()
					if f := next(t, c); !f.Full {
						t.Fatalf("frame after RequestFull: damage %v", f.Damage)
					}

					waiting := make(chan error, 1)
					go func() { _, err := c.Next(ctx); waiting <- err }()
					c.Close()
					if err := <-waiting; !errors.Is(err, desktop.ErrCapturerClosed) {
						t.Fatalf("Next waiting when closed: %v", err)
					}
				})
			}
		})
	}
}

// TestCapturerWithoutDamage: without XDamage nothing says what changed, so
// every frame is whole and Next does not wait.
func TestCapturerWithoutDamage(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "320x240", NoWindowManager: true, NoDamage: true})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	c := d.NewCapturer(0)
	t.Cleanup(c.Close)
	for i := range 3 {
		if f := next(t, c); !f.Full || f.Width != 320 {
			t.Fatalf("frame %d without XDamage: full %v, %dx%d", i, f.Full, f.Width, f.Height)
		}
	}
}

// TestJPEGFromBGRX: an unscaled JPEG screenshot is encoded from the
// capture's BGRX as it is, into a buffer kept between screenshots: it
// comes out byte for byte as the same pixels encoded from RGBA, and a
// screenshot allocates far less than a frame (the RGBA detour allocated a
// whole converted frame each time).
func TestJPEGFromBGRX(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := context.Background()
	c := d.NewCapturer(0)
	t.Cleanup(c.Close)
	next(t, c) // connect before the test client (see desktopDaemon)
	showWindow(t, d, display)
	idle(t, c)
	img, _, err := d.Capture(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, info, err := d.Screenshot(ctx, api.ScreenshotRequest{Format: api.FormatJPEG})
	if err != nil || info.Scale != 1 {
		t.Fatalf("screenshot: %+v, %v", info, err)
	}
	var enc jpegenc.Encoder
	want, err := enc.Append(nil, jpegenc.Image{Pix: img.Pix, Stride: img.Stride, Width: 640, Height: 480, Format: jpegenc.RGBA},
		jpegenc.Options{Quality: desktop.DefaultJPEGQuality})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("JPEG from BGRX (%d bytes) differs from the JPEG of the RGBA capture (%d bytes)", len(got), len(want))
	}

	if raceEnabled {
		t.Log("not measuring the buffer reuse: the race detector makes sync.Pool drop buffers at random")
		return
	}
	const shots = 10
	frame := uint64(640 * 480 * 4)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range shots {
		if _, _, err := d.Screenshot(ctx, api.ScreenshotRequest{Format: api.FormatJPEG}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// Far below a frame even if a GC empties the buffer pool once or twice.
	per := (after.TotalAlloc - before.TotalAlloc) / shots
	t.Logf("a 640x480 JPEG screenshot allocates %d bytes", per)
	if per > frame/2 {
		t.Fatalf("a JPEG screenshot allocates %d bytes, over half a %d-byte frame: the pixels are copied or converted", per, frame)
	}
}

// TestCapturerWindowGone: a stream of a window that goes away ends with
// not_found, also while it waits for damage (a destroyed window draws
// nothing more, and the server frees its damage with it), and a Capturer
// of a window that is not there answers not_found at once.
func TestCapturerWindowGone(t *testing.T) {
	display := desktoptest.Start(t, desktoptest.Options{Size: "640x480"})
	d := desktop.New(desktop.Options{Display: display})
	t.Cleanup(d.Close)
	ctx := context.Background()
	if _, err := d.Windows(ctx, ""); err != nil { // connect before the test client (see desktopDaemon)
		t.Fatal(err)
	}
	xc, win := showWindow(t, d, display)
	c := d.NewCapturer(win.WindowID)
	t.Cleanup(c.Close)
	next(t, c)
	idle(t, c) // no damage pending that could wake the Next below
	waiting := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, desktoptest.EventTimeout)
		defer cancel()
		_, err := c.Next(wctx)
		waiting <- err
	}()
	if err := xproto.DestroyWindowChecked(xc.C, xc.Win).Check(); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; api.KindOf(err) != api.KindNotFound {
		t.Fatalf("Next waiting when its window was destroyed: %v; want not_found", err)
	}
	gone := d.NewCapturer(win.WindowID)
	t.Cleanup(gone.Close)
	if _, err := gone.Next(ctx); api.KindOf(err) != api.KindNotFound {
		t.Fatalf("first frame of a destroyed window: %v; want not_found", err)
	}
}
