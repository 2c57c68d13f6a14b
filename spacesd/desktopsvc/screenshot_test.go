package desktopsvc_test

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/jezek/xgb/xproto"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/capabilities/desktop/desktoptest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

// target is a square of one colour the test finds in a screenshot.
type target struct {
	x, y, size int // in the window
	rgb        uint32
}

// An agent finds a target in a scaled screenshot and clicks the pixel it
// sees it at, passing the screenshot's scale: the click lands on the
// target. The screen is 1921x1081, so no ratio is a round one, and the
// targets sit in the middle, at the edges and in the corner the rounded-
// down image only just reaches; thin lines around them must not pull the
// area average off.
func TestClickLandsOnTheTargetTheScaledScreenshotShows(t *testing.T) {
	const w, h = 1921, 1081
	display := desktoptest.Start(t, desktoptest.Options{Size: fmt.Sprintf("%dx%d", w, h), NoWindowManager: true})
	d := spacesdtest.Start(t, spacesdtest.Options{Display: display})
	c := d.Client
	ctx := t.Context()
	if _, err := c.Capabilities(ctx); err != nil { // connect before the test client (see desktopDaemon)
		t.Fatal(err)
	}
	targets := []target{
		{960, 540, 7, 0xff00ff},
		{0, 0, 7, 0x00ffff},
		{1913, 3, 8, 0xffff00},
		{5, 1073, 7, 0xff8000},
		{1913, 1073, 8, 0x00ff80}, // the bottom row and right column are cut to 720.29 and 1280.0 pixels
		{333, 777, 9, 0x8040ff},
	}
	fills := []desktoptest.Fill{{X: 0, Y: 0, W: w, H: h, RGB: 0x202020}}
	for x := 3; x < w; x += 10 { // one-pixel lines, as text and borders are
		fills = append(fills, desktoptest.Fill{X: x, Y: 0, W: 1, H: h, RGB: 0xe0e0e0})
	}
	for y := 4; y < h; y += 12 {
		fills = append(fills, desktoptest.Fill{X: 0, Y: y, W: w, H: 1, RGB: 0x808080})
	}
	for _, tg := range targets {
		fills = append(fills, desktoptest.Fill{X: tg.x, Y: tg.y, W: tg.size, H: tg.size, RGB: tg.rgb})
	}
	xc := desktoptest.NewXClient(t, display, desktoptest.RandomWord(t), w, h, fills)
	desktoptest.Eventually(t, "the test window painted", func() bool {
		b, info, err := c.Screenshot(ctx, api.ScreenshotRequest{})
		if err != nil {
			return false
		}
		img := decodeShot(t, b, info)
		r, g, bl, _ := img.At(961, 541).RGBA()
		return r>>8 == 0xff && g>>8 == 0 && bl>>8 == 0xff
	})

	for _, tc := range []struct {
		format string
		maxDim int
		scale  float64
	}{
		{api.FormatPNG, 1280, 1280.0 / 1921},
		{api.FormatPNG, 1000, 1000.0 / 1921},
		{api.FormatJPEG, 1280, 1280.0 / 1921},
		{api.FormatPNG, 1922, 1}, // fits: not scaled
	} {
		t.Run(fmt.Sprintf("%s %d", tc.format, tc.maxDim), func(t *testing.T) {
			b, info, err := c.Screenshot(ctx, api.ScreenshotRequest{Format: tc.format, MaxDimension: tc.maxDim, Quality: 95})
			if err != nil {
				t.Fatal(err)
			}
			wantW, wantH := int(w*tc.scale), int(h*tc.scale)
			if info.Scale != tc.scale || info.Width != wantW || info.Height != wantH {
				t.Fatalf("screenshot answered %dx%d at scale %v, want %dx%d at exactly %v", info.Width, info.Height, info.Scale, wantW, wantH, tc.scale)
			}
			img := decodeShot(t, b, info)
			for _, tg := range targets {
				px, py := find(t, img, tg.rgb, tc.format == api.FormatJPEG)
				xc.Drain()
				if _, err := c.Click(ctx, api.ClickRequest{X: px, Y: py, Pointer: api.Pointer{Scale: info.Scale}}); err != nil {
					t.Fatalf("click at (%v, %v): %v", px, py, err)
				}
				ev := desktoptest.Next[xproto.ButtonPressEvent](t, xc, desktoptest.EventTimeout)
				x, y := int(ev.EventX), int(ev.EventY)
				if x < tg.x || x >= tg.x+tg.size || y < tg.y || y >= tg.y+tg.size {
					t.Errorf("target %06x at (%d, %d) size %d: seen at (%v, %v) in the screenshot, the click landed on (%d, %d)",
						tg.rgb, tg.x, tg.y, tg.size, px, py, x, y)
				}
			}
		})
	}
}

// find is where an agent would click on the target of colour rgb: the
// centre of the pixels showing it (exactly, or within JPEG's error).
func find(t *testing.T, img image.Image, rgb uint32, lossy bool) (float64, float64) {
	t.Helper()
	want := [3]int{int(rgb >> 16 & 0xff), int(rgb >> 8 & 0xff), int(rgb & 0xff)}
	var sx, sy, n int
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			d := 0
			for i, v := range [3]uint32{r >> 8, g >> 8, b >> 8} {
				d = max(d, abs(int(v)-want[i]))
			}
			if d == 0 || (lossy && d < 40) {
				sx, sy, n = sx+x, sy+y, n+1
			}
		}
	}
	if n == 0 {
		t.Fatalf("no pixel of the screenshot shows target %06x", rgb)
	}
	// Round to a whole pixel, as an agent names one.
	return float64((2*sx + n) / (2 * n)), float64((2*sy + n) / (2 * n))
}

func abs(v int) int { return max(v, -v) }

func decodeShot(t *testing.T, b []byte, info *api.ScreenshotInfo) image.Image {
	t.Helper()
	var img image.Image
	var err error
	if info.Format == api.FormatJPEG {
		img, err = jpeg.Decode(bytes.NewReader(b))
	} else {
		img, err = png.Decode(bytes.NewReader(b))
	}
	if err != nil {
		t.Fatalf("decode %s: %v", info.Format, err)
	}
	if img.Bounds().Dx() != info.Width || img.Bounds().Dy() != info.Height {
		t.Fatalf("image is %v, info says %dx%d", img.Bounds(), info.Width, info.Height)
	}
	return img
}
