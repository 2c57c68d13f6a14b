// Package yuv converts the X server's BGRX frames to the I420 (YUV 4:2:0)
// images a video encoder takes, for the changed rectangles of a frame only,
// spread over the cores when there is enough to convert.
//
// The conversion is ITU-R BT.601 in limited ("studio") range, which is
// what VP8 decoders, browsers included, assume for untagged video:
// Y in [16, 235], U and V in [16, 240].
package yuv

import (
	"fmt"
	"image"
	"runtime"
	"sync"
)

// Image is an I420 image: a full-size luma plane and two chroma planes of
// half the width and height (rounded up), each chroma sample the average of
// the 2x2 pixels it covers.
type Image struct {
	Y, U, V          []byte
	YStride, CStride int
	Width, Height    int
}

// ChromaSize is the size of an image's chroma planes.
func ChromaSize(w, h int) (int, int) { return (w + 1) / 2, (h + 1) / 2 }

// New allocates an I420 image of w x h pixels with tight strides.
func New(w, h int) *Image {
	cw, ch := ChromaSize(w, h)
	buf := make([]byte, w*h+2*cw*ch)
	return Wrap(buf, w, h)
}

// Wrap lays an I420 image of w x h with tight strides over buf (Y, then
// U, then V, as libvpx's I420 images are), which must hold
// w*h + 2*cw*ch bytes.
func Wrap(buf []byte, w, h int) *Image {
	cw, ch := ChromaSize(w, h)
	ys, cs := w*h, cw*ch
	return &Image{
		Y: buf[:ys:ys], U: buf[ys : ys+cs : ys+cs], V: buf[ys+cs : ys+2*cs : ys+2*cs],
		YStride: w, CStride: cw, Width: w, Height: h,
	}
}

// BGRX is a source frame: 32-bit pixels B, G, R, X; row y at Pix[y*Stride].
type BGRX struct {
	Pix           []byte
	Stride        int
	Width, Height int
}

// MinParallelPixels is the area from which a conversion is split across
// cores: below it, starting goroutines costs more than it saves.
const MinParallelPixels = 128 * 1024

// Convert converts the rectangles rects of src into dst (nil rects: the
// whole frame). Each rectangle is first widened to even coordinates,
// because one chroma sample covers a 2x2 block: a change of one pixel
// changes the whole block's chroma. Pixels outside the rectangles are left
// as they were, so dst must hold the previous frame's conversion.
func Convert(dst *Image, src BGRX, rects []image.Rectangle) error {
	rect := convertRect
	if accelerated {
		rect = convertRectAccel
	}
	return convert(dst, src, rects, rect)
}

// convert is Convert with the loop that converts one (even) rectangle.
func convert(dst *Image, src BGRX, rects []image.Rectangle, convertRect func(*Image, BGRX, image.Rectangle)) error {
	if err := check(dst, src); err != nil {
		return err
	}
	frame := image.Rect(0, 0, src.Width, src.Height)
	if rects == nil {
		rects = []image.Rectangle{frame}
	}
	var bands []image.Rectangle
	area := 0
	for _, r := range rects {
		r = even(r).Intersect(frame)
		if r.Empty() {
			continue
		}
		bands = append(bands, r)
		area += r.Dx() * r.Dy()
	}
	parts := 1
	if area >= MinParallelPixels {
		parts = runtime.GOMAXPROCS(0)
	}
	if parts == 1 {
		for _, r := range bands {
			convertRect(dst, src, r)
		}
		return nil
	}
	// Each goroutine takes a band of rows (of even height, so that no two
	// write the same chroma row) and converts every rectangle's part in
	// it: widened rectangles may overlap, and overlapping parts are then
	// converted by one goroutine.
	var span image.Rectangle
	for _, r := range bands {
		span = span.Union(r)
	}
	per := max(2, ((span.Dy()+parts-1)/parts+1)&^1)
	var wg sync.WaitGroup
	for y := span.Min.Y; y < span.Max.Y; y += per {
		rows := image.Rect(0, y, src.Width, min(y+per, span.Max.Y))
		wg.Go(func() {
			for _, r := range bands {
				if part := r.Intersect(rows); !part.Empty() {
					convertRect(dst, src, part)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

func check(dst *Image, src BGRX) error {
	if dst == nil || dst.Width != src.Width || dst.Height != src.Height {
		return fmt.Errorf("yuv: the I420 image is not %dx%d", src.Width, src.Height)
	}
	if src.Width <= 0 || src.Height <= 0 || src.Stride < src.Width*4 || len(src.Pix) < (src.Height-1)*src.Stride+src.Width*4 {
		return fmt.Errorf("yuv: a %dx%d BGRX frame of stride %d does not fit %d bytes", src.Width, src.Height, src.Stride, len(src.Pix))
	}
	cw, ch := ChromaSize(src.Width, src.Height)
	if dst.YStride < dst.Width || dst.CStride < cw ||
		len(dst.Y) < (dst.Height-1)*dst.YStride+dst.Width ||
		len(dst.U) < (ch-1)*dst.CStride+cw || len(dst.V) < (ch-1)*dst.CStride+cw {
		return fmt.Errorf("yuv: the I420 image's planes are too small for %dx%d", src.Width, src.Height)
	}
	return nil
}

// even widens r to even coordinates on every side.
func even(r image.Rectangle) image.Rectangle {
	r = r.Canon()
	return image.Rect(r.Min.X&^1, r.Min.Y&^1, (r.Max.X+1)&^1, (r.Max.Y+1)&^1)
}

// BT.601 limited range in 8-bit fixed point (the weights of the standard
// scaled by 256 and rounded, as every software converter uses them).
func lumaOf(r, g, b int32) byte { return byte((66*r+129*g+25*b+128)>>8 + 16) }

// chromaOf takes the sums of four pixels' components.
func chromaOf(r, g, b int32) (byte, byte) {
	u := (-38*r - 74*g + 112*b + 512) >> 10
	v := (112*r - 94*g - 18*b + 512) >> 10
	return byte(u + 128), byte(v + 128)
}

// convertRect converts r, whose coordinates are even or at the frame's
// edge, two rows at a time. It is the reference of the vector loops
// (convertRectAccel), which must give the same bytes.
func convertRect(dst *Image, src BGRX, r image.Rectangle) {
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		y1 := min(y+1, src.Height-1) // an odd height repeats its last row
		top := src.Pix[y*src.Stride : y*src.Stride+src.Width*4]
		bot := src.Pix[y1*src.Stride : y1*src.Stride+src.Width*4]
		ytop := dst.Y[y*dst.YStride : y*dst.YStride+src.Width]
		ybot := dst.Y[y1*dst.YStride : y1*dst.YStride+src.Width]
		crow := (y / 2) * dst.CStride
		cw := (src.Width + 1) / 2
		us := dst.U[crow : crow+cw]
		vs := dst.V[crow : crow+cw]
		x := r.Min.X
		// Whole 2x2 blocks: the hot loop, on fixed-size views so that the
		// compiler drops the bounds checks.
		for ; x+2 <= r.Max.X && x+2 <= src.Width; x += 2 {
			t := (*[8]byte)(top[x*4:])
			b := (*[8]byte)(bot[x*4:])
			r00, g00, b00 := int32(t[2]), int32(t[1]), int32(t[0])
			r01, g01, b01 := int32(t[6]), int32(t[5]), int32(t[4])
			r10, g10, b10 := int32(b[2]), int32(b[1]), int32(b[0])
			r11, g11, b11 := int32(b[6]), int32(b[5]), int32(b[4])
			yt := (*[2]byte)(ytop[x:])
			yb := (*[2]byte)(ybot[x:])
			yt[0] = lumaOf(r00, g00, b00)
			yt[1] = lumaOf(r01, g01, b01)
			yb[0] = lumaOf(r10, g10, b10)
			yb[1] = lumaOf(r11, g11, b11)
			us[x/2], vs[x/2] = chromaOf(r00+r01+r10+r11, g00+g01+g10+g11, b00+b01+b10+b11)
		}
		if x < r.Max.X { // the last column of an odd width stands for the missing one
			t, b := top[x*4:], bot[x*4:]
			r0, g0, b0 := int32(t[2]), int32(t[1]), int32(t[0])
			r1, g1, b1 := int32(b[2]), int32(b[1]), int32(b[0])
			ytop[x] = lumaOf(r0, g0, b0)
			ybot[x] = lumaOf(r1, g1, b1)
			us[x/2], vs[x/2] = chromaOf(2*(r0+r1), 2*(g0+g1), 2*(b0+b1))
		}
	}
}
