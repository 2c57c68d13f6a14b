package selftest

import (
	"context"
	"errors"
	"image"
	"testing"

	"github.com/trycua/cua-spacesd/media/vp8"
	"github.com/trycua/cua-spacesd/media/vp8/vp8test"
	"github.com/trycua/cua-spacesd/media/yuv"
)

// TestRun: with the encoder, every frame decodes close to what went in,
// keyframes by both decoders; without it, Run says the build has none.
func TestRun(t *testing.T) {
	rep, err := Run(t.Context())
	if !vp8.Available && !errors.Is(err, vp8.ErrUnavailable) {
		t.Fatalf("Run without an encoder: %v, want ErrUnavailable", err)
	}
	vp8test.Require(t)
	if err != nil {
		t.Fatalf("Run: %v (report %+v)", err, rep)
	}
	type seen struct {
		frame   int
		decoder string
	}
	want := []seen{{1, DecoderXImage}, {1, DecoderLibvpx}, {2, DecoderLibvpx}, {3, DecoderXImage}, {3, DecoderLibvpx}}
	if len(rep.Checks) != len(want) {
		t.Fatalf("checks %+v, want %v", rep.Checks, want)
	}
	for i, c := range rep.Checks {
		if (seen{c.Frame, c.Decoder}) != want[i] || c.Bytes == 0 {
			t.Errorf("check %d: %+v, want frame and decoder %v", i, c, want[i])
		}
		for p, v := range c.PSNR {
			if v < MinPSNR {
				t.Errorf("check %d plane %d: %.1f dB", i, p, v)
			}
		}
	}
	if rep.Frames != len(sequence()) {
		t.Errorf("%d frames checked, want %d", rep.Frames, len(sequence()))
	}
	if rep.Encoder != "libvpx "+vp8.Version() {
		t.Errorf("encoder %q", rep.Encoder)
	}
}

// TestRunCancelled: a cancelled context ends the test before any frame.
func TestRunCancelled(t *testing.T) {
	if !vp8.Available {
		t.Skip("no VP8 encoder in this build: Run ends before the context matters")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a cancelled context: %v", err)
	}
}

// TestCompareRefusesWrongPictures: the check the self-test rests on tells
// a right picture from the wrong ones a broken encoder or decoder would
// show. It needs no encoder: the "decoded" pictures are the source's own
// planes, exact or spoiled.
func TestCompareRefusesWrongPictures(t *testing.T) {
	const w, h = Width, Height
	frameOf := func(paint func(yuv.BGRX)) *yuv.Image {
		src := yuv.BGRX{Pix: make([]byte, w*h*4), Stride: w * 4, Width: w, Height: h}
		paint(src)
		im := yuv.New(w, h)
		if err := yuv.Convert(im, src, nil); err != nil {
			t.Fatal(err)
		}
		return im
	}
	barsAt := func(shift int) func(yuv.BGRX) { return func(f yuv.BGRX) { bars(f, shift) } }
	asYCbCr := func(im *yuv.Image) *image.YCbCr {
		out := image.NewYCbCr(image.Rect(0, 0, im.Width, im.Height), image.YCbCrSubsampleRatio420)
		cw, ch := yuv.ChromaSize(im.Width, im.Height)
		for y := range im.Height {
			copy(out.Y[y*out.YStride:], im.Y[y*im.YStride:][:im.Width])
		}
		for y := range ch {
			copy(out.Cb[y*out.CStride:], im.U[y*im.CStride:][:cw])
			copy(out.Cr[y*out.CStride:], im.V[y*im.CStride:][:cw])
		}
		return out
	}
	still, moved, fine := frameOf(barsAt(0)), frameOf(barsAt(Width/5)), frameOf(detail)

	swapped := asYCbCr(still)
	swapped.Cb, swapped.Cr = swapped.Cr, swapped.Cb
	shifted := asYCbCr(fine)
	copy(shifted.Y[shifted.YStride:], shifted.Y[:len(shifted.Y)-shifted.YStride])
	tests := []struct {
		name  string
		want  *yuv.Image
		got   *image.YCbCr
		right bool
	}{
		{"the same picture", still, asYCbCr(still), true},
		{"the frame before", moved, asYCbCr(still), false},
		{"U and V swapped", still, swapped, false},
		{"rows shifted by one", fine, shifted, false},
		{"another picture", fine, asYCbCr(still), false},
		{"another size", still, asYCbCr(frameOf(barsAt(0))).SubImage(image.Rect(0, 0, w-1, h)).(*image.YCbCr), false},
		{"4:4:4", still, image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio444), false},
	}
	for _, tt := range tests {
		psnr, err := Compare(tt.want, tt.got)
		if (err == nil) != tt.right {
			t.Errorf("%s: PSNR %.1f, %v; want right=%v", tt.name, psnr, err, tt.right)
		}
		t.Logf("%s: PSNR %.1f", tt.name, psnr)
	}
}
