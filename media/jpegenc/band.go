package jpegenc

// Fixed-point (16-bit fraction) colour conversion of JFIF section 7 /
// ITU-R BT.601: Y = 0.299 R + 0.587 G + 0.114 B, Cb = (B - Y) / 1.772,
// Cr = (R - Y) / 1.402. Each row of weights sums to 2^16 (Y) or 0 (Cb,
// Cr), so grey stays exactly grey.
const (
	yR, yG, yB    = 19595, 38470, 7471
	cbR, cbG, cbB = -11059, -21709, 32768
	crR, crG, crB = 32768, -27439, -5329
)

// mcu holds one 16x16 block of pixels as 4 luma blocks (left to right, top
// to bottom, the order of T.81 A.2.3) and the 2x2-averaged chroma blocks,
// all level-shifted and times 4 (sampleShift).
type mcu struct {
	y      [4][blockSize]int32
	cb, cr [blockSize]int32
}

// load fills m from 16 rows and 16 column byte offsets, which the caller
// clamps to the image so edges replicate the last row and column. ri and
// bi are the byte offsets of red and blue within a pixel.
func (m *mcu) load(rows *[mcuDim][]byte, cols *[mcuDim]int, ri, bi int) {
	ri &= 3
	bi &= 3
	for cy := range blockDim {
		top, bot := rows[2*cy], rows[2*cy+1]
		yblk := (cy >> 2) * 2 // blocks 0-1 hold rows 0-7, blocks 2-3 rows 8-15
		yoff := (2 * cy & 7) * blockDim
		for cx := range blockDim {
			o0, o1 := cols[2*cx], cols[2*cx+1]
			p00 := (*[bytesPerPixel]byte)(top[o0:])
			p01 := (*[bytesPerPixel]byte)(top[o1:])
			p10 := (*[bytesPerPixel]byte)(bot[o0:])
			p11 := (*[bytesPerPixel]byte)(bot[o1:])
			r00, g00, b00 := int32(p00[ri]), int32(p00[1]), int32(p00[bi])
			r01, g01, b01 := int32(p01[ri]), int32(p01[1]), int32(p01[bi])
			r10, g10, b10 := int32(p10[ri]), int32(p10[1]), int32(p10[bi])
			r11, g11, b11 := int32(p11[ri]), int32(p11[1]), int32(p11[bi])

			// Y times 4: shift by 14 rather than 16, then level-shift by 128*4.
			const ySh, yLevel = 16 - sampleShift, 128 << sampleShift
			blk := &m.y[yblk+cx>>2]
			i := yoff + (2*cx)&7
			blk[i] = (yR*r00+yG*g00+yB*b00+1<<(ySh-1))>>ySh - yLevel
			blk[i+1] = (yR*r01+yG*g01+yB*b01+1<<(ySh-1))>>ySh - yLevel
			blk[i+blockDim] = (yR*r10+yG*g10+yB*b10+1<<(ySh-1))>>ySh - yLevel
			blk[i+blockDim+1] = (yR*r11+yG*g11+yB*b11+1<<(ySh-1))>>ySh - yLevel

			// The chroma of the sum of 4 pixels is 4 times their average's:
			// the times-4 precision comes for free. The level shift of 128
			// cancels Cb's and Cr's offset of 128.
			rs, gs, bs := r00+r01+r10+r11, g00+g01+g10+g11, b00+b01+b10+b11
			c := cy*blockDim + cx
			m.cb[c] = (cbR*rs + cbG*gs + cbB*bs + 1<<15) >> 16
			m.cr[c] = (crR*rs + crG*gs + crB*bs + 1<<15) >> 16
		}
	}
}

// encodeBand codes MCU rows [r0, r1) of img with its own DC predictions
// (a restart interval starts with them at zero, F.1.2.1) and, when rst is
// not negative, ends with the padding and marker RST<rst> that start the
// next interval.
func encodeBand(buf []byte, img *Image, t *tables, r0, r1, rst int) []byte {
	w := bitWriter{buf: buf}
	ri, bi := 0, 2
	if img.Format == BGRX {
		ri, bi = 2, 0
	}
	var (
		m             mcu
		zz            [blockSize]int32
		dcY, dcB, dcR int32
		rows          [mcuDim][]byte
		cols          [mcuDim]int
	)
	rowBytes := img.Width * bytesPerPixel
	for r := r0; r < r1; r++ {
		for i := range rows {
			y := min(r*mcuDim+i, img.Height-1)
			rows[i] = img.Pix[y*img.Stride : y*img.Stride+rowBytes]
		}
		for x0 := 0; x0 < img.Width; x0 += mcuDim {
			for i := range cols {
				cols[i] = min(x0+i, img.Width-1) * bytesPerPixel
			}
			m.load(&rows, &cols, ri, bi)
			for b := range m.y {
				fdct(&m.y[b])
				nz := quantize(&zz, &m.y[b], &t.lumaR)
				w.encodeBlock(&zz, nz, &dcY, t.dcY, t.acY)
			}
			fdct(&m.cb)
			nz := quantize(&zz, &m.cb, &t.chromaR)
			w.encodeBlock(&zz, nz, &dcB, t.dcC, t.acC)
			fdct(&m.cr)
			nz = quantize(&zz, &m.cr, &t.chromaR)
			w.encodeBlock(&zz, nz, &dcR, t.dcC, t.acC)
		}
	}
	w.align()
	if rst >= 0 {
		w.buf = append(w.buf, 0xff, byte(markerRST0+rst))
	}
	return w.buf
}
