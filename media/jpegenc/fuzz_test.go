package jpegenc_test

import (
	"image"
	"testing"

	"github.com/trycua/cua-spacesd/media/jpegenc"
)

// FuzzEncode encodes random small frames (size, pixels, quality, bands,
// pixel format from the input) and requires image/jpeg to decode each to
// the right size.
func FuzzEncode(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(80), uint8(0), false, []byte{0xff, 0, 0, 0xff})
	f.Add(uint8(17), uint8(9), uint8(100), uint8(3), true, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add(uint8(33), uint8(40), uint8(1), uint8(2), false, []byte("a long enough seed to repeat over the frame"))
	f.Add(uint8(16), uint8(48), uint8(50), uint8(200), true, []byte{0x12, 0x34, 0x56})
	f.Add(uint8(255), uint8(3), uint8(0), uint8(1), false, []byte{})
	f.Fuzz(func(t *testing.T, w, h, quality, bands uint8, bgr bool, seed []byte) {
		width, height := int(w)%96+1, int(h)%96+1
		img := jpegenc.Image{
			Pix:    make([]byte, width*height*4),
			Stride: width * 4,
			Width:  width, Height: height,
		}
		if bgr {
			img.Format = jpegenc.BGRX
		}
		if len(seed) > 0 {
			for i := range img.Pix {
				img.Pix[i] = seed[i%len(seed)] ^ byte(i*7)
			}
		}
		o := jpegenc.Options{Quality: int(quality) % 101, Bands: int(bands) % 12}
		var enc jpegenc.Encoder
		b, err := enc.Append(nil, img, o)
		if err != nil {
			t.Fatalf("%dx%d %+v: %v", width, height, o, err)
		}
		got := decode(t, b)
		if got.Bounds() != image.Rect(0, 0, width, height) {
			t.Fatalf("%dx%d %+v: decoded as %v", width, height, o, got.Bounds())
		}
	})
}
