package vp8_test

import (
	"bytes"
	"image"
	"math/rand/v2"
	"testing"
	"time"

	xvp8 "golang.org/x/image/vp8"

	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/media/yuv"
)

// quarters paints a w x h BGRX frame in four colours: red, green, blue,
// white from the top left, clockwise... row by row.
func quarters(w, h int) yuv.BGRX {
	f := yuv.BGRX{Pix: make([]byte, w*h*4), Stride: w * 4, Width: w, Height: h}
	for y := range h {
		for x := range w {
			var bgr [3]byte
			switch {
			case x < w/2 && y < h/2:
				bgr = [3]byte{0, 0, 255}
			case y < h/2:
				bgr = [3]byte{0, 255, 0}
			case x < w/2:
				bgr = [3]byte{255, 0, 0}
			default:
				bgr = [3]byte{255, 255, 255}
			}
			copy(f.Pix[y*f.Stride+x*4:], bgr[:])
		}
	}
	return f
}

// RGB converts a decoded BT.601 limited-range sample back to 8-bit RGB.
func RGB(img *image.YCbCr, x, y int) (r, g, b int) {
	yy := float64(img.Y[img.YOffset(x, y)]) - 16
	cb := float64(img.Cb[img.COffset(x, y)]) - 128
	cr := float64(img.Cr[img.COffset(x, y)]) - 128
	c := func(v float64) int { return int(min(max(v, 0), 255) + 0.5) }
	return c(1.164*yy + 1.596*cr), c(1.164*yy - 0.392*cb - 0.813*cr), c(1.164*yy + 2.017*cb)
}

func near(got [3]int, want [3]int) bool {
	for i := range got {
		if d := got[i] - want[i]; d < -24 || d > 24 {
			return false
		}
	}
	return true
}

// TestEncodeDecode: a keyframe of four colours decodes (with x/image/vp8,
// the independent decoder of the tests, and with libvpx's) to those
// colours in the right places; an unchanged frame after it is a small
// interframe; a forced keyframe is one.
func TestEncodeDecode(t *testing.T) {
	vp8test.Require(t)
	for _, size := range []image.Point{{320, 240}, {161, 97}} {
		enc, err := vp8.NewEncoder(vp8.Options{Width: size.X, Height: size.Y})
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		if err := yuv.Convert(enc.Image(), quarters(size.X, size.Y), nil); err != nil {
			t.Fatal(err)
		}
		key, err := enc.Encode(0, 33*time.Millisecond, true)
		if err != nil || !key.Key {
			t.Fatalf("%v: first frame: key %v, %v", size, key.Key, err)
		}
		var d xvp8.Decoder
		d.Init(bytes.NewReader(key.Data), len(key.Data))
		fh, err := d.DecodeFrameHeader()
		if err != nil || !fh.KeyFrame || fh.Width != size.X || fh.Height != size.Y {
			t.Fatalf("%v: keyframe header %+v, %v", size, fh, err)
		}
		img, err := d.DecodeFrame()
		if err != nil {
			t.Fatal(err)
		}
		dec, err := vp8.NewDecoder()
		if err != nil {
			t.Fatal(err)
		}
		defer dec.Close()
		img2, err := dec.Decode(key.Data)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			x, y int
			rgb  [3]int
		}{
			{size.X / 4, size.Y / 4, [3]int{255, 0, 0}},
			{3 * size.X / 4, size.Y / 4, [3]int{0, 255, 0}},
			{size.X / 4, 3 * size.Y / 4, [3]int{0, 0, 255}},
			{3 * size.X / 4, 3 * size.Y / 4, [3]int{255, 255, 255}},
		} {
			for name, im := range map[string]*image.YCbCr{"x/image/vp8": img, "libvpx": img2} {
				r, g, b := RGB(im, p.x, p.y)
				if !near([3]int{r, g, b}, p.rgb) {
					t.Errorf("%v %s: pixel (%d, %d) decodes to %d,%d,%d, want %v", size, name, p.x, p.y, r, g, b, p.rgb)
				}
			}
		}
		inter, err := enc.Encode(33*time.Millisecond, 33*time.Millisecond, false)
		if err != nil || inter.Key || len(inter.Data) >= len(key.Data)/4 {
			t.Fatalf("%v: unchanged frame: key %v, %d bytes after a keyframe of %d, %v", size, inter.Key, len(inter.Data), len(key.Data), err)
		}
		if _, err := dec.Decode(inter.Data); err != nil {
			t.Fatalf("%v: decode the interframe: %v", size, err)
		}
		if err := enc.SetBitrate(500); err != nil || enc.Bitrate() != 500 {
			t.Fatalf("set bitrate: %v, now %d", err, enc.Bitrate())
		}
		forced, err := enc.Encode(66*time.Millisecond, 33*time.Millisecond, true)
		if err != nil || !forced.Key {
			t.Fatalf("%v: forced keyframe: key %v, %v", size, forced.Key, err)
		}
	}
}

func TestBitrateBounds(t *testing.T) {
	vp8test.Require(t)
	enc, err := vp8.NewEncoder(vp8.Options{Width: 64, Height: 64, BitrateKbps: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	if enc.Bitrate() != vp8.MinBitrateKbps {
		t.Fatalf("bitrate 1 kbit/s became %d, want the floor %d", enc.Bitrate(), vp8.MinBitrateKbps)
	}
	if err := enc.SetBitrate(1 << 30); err != nil || enc.Bitrate() != vp8.MaxBitrateKbps {
		t.Fatalf("a huge bitrate became %d (%v), want the cap %d", enc.Bitrate(), err, vp8.MaxBitrateKbps)
	}
	for _, bad := range []image.Point{{0, 10}, {10, -1}, {vp8.MaxDimension + 1, 10}} {
		if _, err := vp8.NewEncoder(vp8.Options{Width: bad.X, Height: bad.Y}); err == nil {
			t.Fatalf("an encoder of %v opened", bad)
		}
	}
}

// BenchmarkEncode1080p encodes a 1080p frame whose top third changes each
// time (a scrolling terminal's share of a screen), after one keyframe.
func BenchmarkEncode1080p(b *testing.B) {
	vp8test.Require(b)
	enc, err := vp8.NewEncoder(vp8.Options{Width: 1920, Height: 1080})
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	f := quarters(1920, 1080)
	if err := yuv.Convert(enc.Image(), f, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := enc.Encode(0, time.Millisecond, true); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		for y := range 360 {
			row := f.Pix[y*f.Stride:][:f.Stride]
			for x := 0; x < len(row); x += 4 {
				row[x] = byte(x/4 + y + i*7)
			}
		}
		if err := yuv.Convert(enc.Image(), f, []image.Rectangle{image.Rect(0, 0, 1920, 360)}); err != nil {
			b.Fatal(err)
		}
		if _, err := enc.Encode(time.Duration(i)*33*time.Millisecond, 33*time.Millisecond, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeScrollingText720p encodes a terminal's page of text
// scrolling by one line a frame, the motion of DESIGN §5's comparison.
func BenchmarkEncodeScrollingText720p(b *testing.B) {
	vp8test.Require(b)
	const w, h, line, lines = 1280, 720, 13, 100
	enc, err := vp8.NewEncoder(vp8.Options{Width: w, Height: h})
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	// Glyph-like blocks of white dots in 6x13 cells, two of three filled.
	rng := rand.New(rand.NewPCG(1, 2))
	page := make([]byte, w*(h+line*lines)*4)
	for cy := range (h + line*lines) / line {
		for cx := range w / 6 {
			if rng.IntN(3) == 0 {
				continue
			}
			for y := 2; y < 11; y++ {
				for x := 1; x < 5; x++ {
					if rng.IntN(2) == 0 {
						o := ((cy*line+y)*w + cx*6 + x) * 4
						page[o], page[o+1], page[o+2] = 255, 255, 255
					}
				}
			}
		}
	}
	i := 0
	for b.Loop() {
		off := (i % lines) * line * w * 4
		if err := yuv.Convert(enc.Image(), yuv.BGRX{Pix: page[off : off+w*h*4], Stride: w * 4, Width: w, Height: h}, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := enc.Encode(time.Duration(i)*33*time.Millisecond, 33*time.Millisecond, i == 0); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
