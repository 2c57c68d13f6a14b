// Package scaletest makes frames for the tests and benchmarks of scaling:
// a screen-like test pattern with the detail a shrink most easily gets
// wrong (one-pixel lines, a one-pixel checkerboard, glyph strokes), and
// the reference area average that media/scale must match.
package scaletest

import "encoding/binary"

// Desktop returns a w x h frame of BGRX pixels, row y at y*stride (stride
// >= 4*w), that looks like a desktop to an encoder: flat windows with
// title bars and rows of text-like glyph strokes, one or two pixels thin,
// on a dark background. The bytes past each row's w pixels are pad.
func Desktop(w, h, stride int, pad byte) []byte {
	pix := make([]byte, max(0, (h-1)*stride+w*4))
	for i := range pix {
		pix[i] = pad
	}
	c := canvas{pix: pix, w: w, h: h, stride: stride}
	c.fill(0, 0, w, h, 0x2e3440)
	// Windows in proportion to the frame, so small frames get them too.
	for i, r := range [][4]int{{3, 4, 57, 70}, {47, 28, 97, 96}, {10, 76, 36, 98}} {
		x0, y0, x1, y1 := r[0]*w/100, r[1]*h/100, r[2]*w/100, r[3]*h/100
		c.fill(x0, y0, x1, y1, 0xfafafa)
		c.fill(x0, y0, x1, min(y1, y0+max(1, h/40)), 0x3b82f6-uint32(40*i))
		for line, y := 0, y0+max(2, h/40)+2; y+10 < y1; line, y = line+1, y+18 {
			if line%6 == 5 {
				continue // between paragraphs
			}
			end := x0 + (x1-x0)*(3+(line*7)%8)/10 // lines of 30% to 100% of the width
			for x := x0 + 6; x+8 < min(end, x1-4); x += 9 {
				if (x*7+y*3)%11 < 8 { // a glyph: a stem and a bar, one or two pixels thin
					c.fill(x, y, x+1+(x/9)%2, y+10, 0x202020)
					c.fill(x+1, y+4, x+6, y+5+(y/18)%2, 0x202020)
				}
			}
		}
	}
	return pix
}

// canvas paints opaque rectangles into a BGRX frame.
type canvas struct {
	pix          []byte
	w, h, stride int
}

func (c canvas) set(x, y int, rgb uint32) {
	if x >= 0 && y >= 0 && x < c.w && y < c.h {
		binary.LittleEndian.PutUint32(c.pix[y*c.stride+x*4:], rgb) // 0x00RRGGBB is B, G, R, X in memory
	}
}

func (c canvas) fill(x0, y0, x1, y1 int, rgb uint32) {
	for y := max(y0, 0); y < min(y1, c.h); y++ {
		for x := max(x0, 0); x < min(x1, c.w); x++ {
			c.set(x, y, rgb)
		}
	}
}

// Pattern returns a Desktop frame with the detail a shrink most easily
// gets wrong painted over it: one-pixel grid lines, a one-pixel
// checkerboard, a gradient and a small patch of noise from seed, and an X
// byte that varies (a real capture's is undefined).
func Pattern(w, h, stride int, seed uint64, pad byte) []byte {
	pix := Desktop(w, h, stride, pad)
	c := canvas{pix: pix, w: w, h: h, stride: stride}
	set := c.set
	rng := seed | 1
	next := func() uint64 { // xorshift64: reproducible noise, no global state
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return rng
	}
	// One-pixel grid lines, every 7th column and 5th row of the top band.
	for y := 0; y < h/5; y++ {
		for x := 0; x < w; x++ {
			if x%7 == 0 || y%5 == 0 {
				set(x, y, 0xffff00)
			}
		}
	}
	// A one-pixel checkerboard, and a gradient below it.
	for y := h / 5; y < 2*h/5; y++ {
		for x := 0; x < w/3; x++ {
			if (x+y)%2 == 0 {
				set(x, y, 0xffffff)
			} else {
				set(x, y, 0x000000)
			}
		}
	}
	for y := 2 * h / 5; y < 3*h/5; y++ {
		for x := 0; x < w/3; x++ {
			g := uint32(x * 255 / max(1, w/3))
			set(x, y, g<<16|(255-g)<<8|uint32(y*255/max(1, h))&0xff)
		}
	}
	// Noise in a corner: the worst for a JPEG, so kept small, as photos
	// are on a desktop.
	for y := 3 * h / 5; y < 3*h/5+max(1, h/10); y++ {
		for x := 7 * w / 8; x < w; x++ {
			set(x, y, uint32(next())&0xffffff)
		}
	}
	// Make the X byte vary, so a scaler that let it into a colour shows.
	for y := range h {
		for x := range w {
			pix[y*stride+x*4+3] = byte(next())
		}
	}
	return pix
}

// Reference is the area average of the BGRX frame src (w x h, stride) at
// num/den output pixels per source pixel, as RGB triples of float64 per
// output pixel, ow x oh: the slow, obviously correct definition media/scale
// must match. Output pixel (x, y) covers the source rectangle [x*den/num,
// (x+1)*den/num) by [y*den/num, (y+1)*den/num), clipped to the frame; each
// source pixel counts by the area it shares with it.
func Reference(src []byte, w, h, stride, num, den, ow, oh int) [][3]float64 {
	out := make([][3]float64, ow*oh)
	s := float64(den) / float64(num)
	overlap := func(a0, a1, b0, b1 float64) float64 { return max(0, min(a1, b1)-max(a0, b0)) }
	for y := range oh {
		y0, y1 := float64(y)*s, min(float64(y+1)*s, float64(h))
		for x := range ow {
			x0, x1 := float64(x)*s, min(float64(x+1)*s, float64(w))
			var sum [3]float64
			area := 0.0
			for sy := int(y0); sy < h && float64(sy) < y1; sy++ {
				fy := overlap(y0, y1, float64(sy), float64(sy+1))
				for sx := int(x0); sx < w && float64(sx) < x1; sx++ {
					a := fy * overlap(x0, x1, float64(sx), float64(sx+1))
					p := src[sy*stride+sx*4:]
					sum[0] += a * float64(p[2]) // red
					sum[1] += a * float64(p[1])
					sum[2] += a * float64(p[0])
					area += a
				}
			}
			for c := range sum {
				out[y*ow+x][c] = sum[c] / area
			}
		}
	}
	return out
}
